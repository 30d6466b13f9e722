"""axe-core on every page type Logbook serves, in both themes and at both sizes (issue 47):
0 serious or critical problems on each, and at a phone's width no page scrolls sideways.

One history shows every page at its best: a generated schema-22 live file (gateway origins,
lineages, a long conversation) beside an archive file, a second profile, a prune and a move
to cold storage already run (their result pages), a login page in remote mode, and the
pages that say no (not found, an ambiguous id, a bad parameter). With LOGBOOK_SCREENSHOTS,
the README's light/dark pictures are taken here (desktop size)."""

from __future__ import annotations

import re
import shutil

import pytest

from support import FIXTURES, make_app, sql
from support.browser import LiveServer, axe_problems, screenshot

pytestmark = pytest.mark.browser

SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
TOKEN = "a-remote-admin-token-for-axe"
# The README's light/dark table (taken at desktop size).
PICTURED = ("sessions", "viewer", "search", "lineage", "stats", "export", "prune", "stores")


def _run_job(chromium, url: str, form: str, done: str) -> str:
    """Run a prune or a move to cold storage as a person does; the address of its result."""
    context = chromium.new_context()
    page = context.new_page()
    try:
        page.goto(url)
        box = page.locator(f"{form} input[name=confirm][type=checkbox]")
        if box.count():
            box.check()
        page.locator(f"{form} button[type=submit]").last.click()
        page.wait_for_url(re.compile(r"/jobs/[0-9a-f]+$"))
        page.locator(".prune-job", has_text=done).wait_for(timeout=60_000)
        return "/" + page.url.split("://", 1)[1].split("/", 1)[1]
    finally:
        context.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory, chromium):
    from webui.demo import generate

    tmp = tmp_path_factory.mktemp("axe-world")
    root = tmp / "hermes"
    (root / "profiles" / "lab").mkdir(parents=True)
    db = root / "state.db"
    info = generate(db, sessions=180, seed=4747, long_session_messages=260, schema=22)
    shutil.copyfile(FIXTURES / "hermes-v22.db", root / "profiles" / "lab" / "state.db")
    archives = tmp / "archives"
    archives.mkdir()
    shutil.copyfile(FIXTURES / "hermes-v11.db", archives / "hermes-archive-2026-03.db")
    app = make_app(
        db,
        tmp / "inst",
        LOGBOOK_HERMES_ROOT=str(root),
        LOGBOOK_PROFILE_NAME="default",
        LOGBOOK_ARCHIVES=[str(archives)],
    )
    srv = LiveServer(app)
    remote = LiveServer(
        make_app(
            shutil.copyfile(FIXTURES / "hermes-v22.db", tmp / "remote.db"),
            tmp / "inst-remote",
            LOGBOOK_REMOTE=True,
            LOGBOOK_HOST="0.0.0.0",
            LOGBOOK_TOKEN=TOKEN,
            LOGBOOK_PRIVATE=True,
        )
    )
    try:
        jobs = {
            "prune-job": _run_job(
                chromium, f"{srv.url}/prune?older_than=330", "form.prune-run", "Deleted"
            ),
            "coldstore-job": _run_job(
                chromium, f"{srv.url}/coldstore?older_than=300", "form.coldstore-run", "Moved"
            ),
        }
        yield db, srv, remote, info.long_session_id, jobs
    finally:
        srv.close()
        remote.close()


def page_types(db, long_id: str, jobs: dict[str, str]) -> dict[str, str]:
    family = sql(
        db,
        "WITH RECURSIVE d(id, root) AS (SELECT id, id FROM sessions WHERE "
        "parent_session_id IS NULL UNION SELECT s.id, d.root FROM sessions s JOIN d "
        "ON s.parent_session_id = d.id) SELECT root FROM d GROUP BY root "
        "ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    rich = sql(
        db,
        "SELECT session_id FROM messages WHERE tool_calls IS NOT NULL AND session_id != ? "
        "GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
        (long_id,),
    )[0][0]
    chat = sql(
        db,
        "SELECT session_key FROM sessions WHERE session_key IS NOT NULL GROUP BY 1 "
        "ORDER BY COUNT(*) DESC LIMIT 1",
    )[0][0]
    prefix = sql(db, "SELECT substr(id, 1, 6) FROM sessions GROUP BY 1 ORDER BY COUNT(*) DESC")[0][
        0
    ]
    return {
        "sessions": "/sessions",
        "sessions-every-store": "/sessions?rows=all&archived=include&sort=started",
        "live": "/live?active=525600",
        "viewer": f"/sessions/{rich}",
        "long": f"/sessions/{long_id}",
        "search": "/search?q=docker",
        "search-notice": '/search?q="zzqx',
        "lineage": f"/sessions/{family}/lineage",
        "stats": "/stats?period=all",
        "stats-profiles": "/stats?period=all&profile=all",
        "export": "/export",
        "prune": "/prune?older_than=200",
        "archive": "/archive?older_than=200",
        "coldstore": "/coldstore?older_than=200",
        **jobs,
        "stores": "/stores",
        "chats": "/chats",
        "chat": f"/chats/{chat}",
        "workspaces": "/workspaces",
        "people": "/people",
        "delete": f"/sessions/{rich}/delete",
        "not-found": "/sessions/no-such-session",
        "ambiguous": f"/sessions/{prefix}",
        "bad-request": "/sessions?sort=sideways",
    }


@pytest.mark.parametrize("size", SIZES, ids=list(SIZES))
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_type_passes_axe(world, chromium, scheme, size):
    db, srv, remote, long_id, jobs = world
    w, h = SIZES[size]
    context = chromium.new_context(
        viewport={"width": w, "height": h},
        color_scheme=scheme,
        bypass_csp=True,  # axe is injected as a script
        is_mobile=size == "phone",
    )
    pg = context.new_page()
    problems, sideways = [], []
    pages = {**page_types(db, long_id, jobs), "login": None}
    try:
        for name, path in pages.items():
            url = f"{remote.url}/login" if name == "login" else srv.url + path
            pg.goto(url)
            pg.wait_for_load_state("networkidle")
            if name == "viewer":
                for d in pg.locator("article.msg details").all()[:30]:
                    d.evaluate("el => el.open = true")  # tool calls, reasoning, raw text
            if size == "desktop" and name in PICTURED:
                screenshot(pg, f"{name}-{scheme}.png")
            problems += axe_problems(pg, f"{name} ({scheme}, {size})")
            if size == "phone":
                width = pg.evaluate("document.documentElement.scrollWidth")
                if width > w:
                    sideways.append((name, width))
        # A menu of the navigation, open (its list drops over the page).
        pg.goto(srv.url + "/sessions")
        pg.locator("details.nav-menu > summary").click()
        problems += axe_problems(pg, f"history menu ({scheme}, {size})")
    finally:
        context.close()
    assert len(pages) >= 26
    assert not problems, problems
    assert not sideways, sideways
