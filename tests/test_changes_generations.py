"""Changes on the files Hermes 0.20 and 0.22 write, beyond what the oracle tier compares table by
table (tests/test_oracle_generations.py, tests/test_oracle_coldstore.py): each rule of the
file's Hermes on its own — titles and their source, a ghost's and the Bot Chat's titles, the
guards of an active session, a pinned session's warning, pins and hidden flags on whole
lineages, the idle sweep's stamp, prompts no session uses, prune batches of whole
conversations, the held-store refusal and its override, and what every page says a file
allows. Real copies of the fixtures Hermes wrote, real HTTP through the app."""

from __future__ import annotations

import html
import os
import subprocess
import sys
import time

import pytest

from support import copy_fixture, make_app, sql
from support.http import post

G20 = ["hermes-v26-fresh.db", "hermes-v26-migrated.db"]
G22 = ["hermes-v31-fresh.db", "hermes-v31-migrated.db"]


def _app(tmp_path, fixture: str, **config):
    db = copy_fixture(fixture, tmp_path)
    return db, make_app(db, tmp_path / "inst", **config).test_client()


def _one(db, query: str, params=()):
    rows = sql(db, query, params)
    return rows[0] if rows else None


# -- rename -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", G20 + G22)
def test_a_rename_is_the_users_title_and_clearing_it_clears_who_titled_it(tmp_path, fixture):
    db, client = _app(tmp_path, fixture)
    assert _one(db, "SELECT title_source FROM sessions WHERE id = 'g_words'") == ("llm",)
    r = post(client, "/sessions/g_words/title", {"title": "  Nginx \u200b  timeouts\t"})
    assert r.status_code == 200
    assert _one(db, "SELECT title, title_source FROM sessions WHERE id = 'g_words'") == (
        "Nginx timeouts",
        "user",
    )
    assert post(client, "/sessions/g_words/title", {"title": "   "}).status_code == 200
    assert _one(db, "SELECT title, title_source FROM sessions WHERE id = 'g_words'") == (None, None)


@pytest.mark.parametrize("fixture", G22)
def test_hermes_words_for_a_title_refused(tmp_path, fixture):
    db, client = _app(tmp_path, fixture)
    r = post(client, "/sessions/g_words/title", {"title": "x" * 101})
    assert r.status_code == 422 and "Title too long (101 chars, max 100)" in r.get_data(
        as_text=True
    )
    r = post(client, "/sessions/g_words/title", {"title": "Model switch mid-session"})
    assert r.status_code == 409
    assert "already in use by" in r.get_data(as_text=True)
    assert _one(db, "SELECT title FROM sessions WHERE id = 'g_words'") == (
        "Nginx upstream timeouts",
    )


@pytest.mark.parametrize("fixture", G20 + G22)
def test_a_title_on_a_compression_ancestor_moves_to_the_tip(tmp_path, fixture):
    db, client = _app(tmp_path, fixture)
    r = post(client, "/sessions/g_chain_tip/title", {"title": "Atlas Postgres upgrade"})
    assert r.status_code == 200
    got = dict(sql(db, "SELECT id, title FROM sessions WHERE id LIKE 'g_chain_%'"))
    assert got == {
        "g_chain_root": None,
        "g_chain_mid": "Atlas Postgres upgrade #2",
        "g_chain_tip": "Atlas Postgres upgrade",
    }
    # the ancestor keeps who titled it (Hermes clears the title only)
    assert _one(db, "SELECT title_source FROM sessions WHERE id = 'g_chain_root'") == ("user",)


@pytest.mark.parametrize("fixture,frees", [(f, False) for f in G20] + [(f, True) for f in G22])
def test_a_ghost_gives_up_its_title_on_022_files_only(tmp_path, fixture, frees):
    """g_empty: ended, no messages, not archived, not hidden — a chat the lists never show."""
    db, client = _app(tmp_path, fixture)
    assert post(client, "/sessions/g_empty/title", {"title": "Scratch"}).status_code == 200
    r = post(client, "/sessions/g_words/title", {"title": "Scratch"})
    if frees:
        assert r.status_code == 200
        assert _one(db, "SELECT title, title_source FROM sessions WHERE id = 'g_empty'") == (
            None,
            None,
        )
        assert _one(db, "SELECT title FROM sessions WHERE id = 'g_words'") == ("Scratch",)
    else:
        assert r.status_code == 409 and "g_empty" in r.get_data(as_text=True)


def test_the_hidden_bot_chat_keeps_its_name_and_stays_hidden_when_pinned(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    assert (
        post(client, "/sessions/g_hidden_session/title", {"title": "Bot Chat"}).status_code == 200
    )
    r = post(client, "/sessions/g_hidden_session/title", {"title": "Something else"})
    assert r.status_code == 422 and "canonical Bot Chat" in r.get_data(as_text=True)
    assert post(client, "/sessions/g_hidden_session/pin", {"pinned": "1"}).status_code == 200
    assert _one(db, "SELECT title, pinned, hidden FROM sessions WHERE id = 'g_hidden_session'") == (
        "Bot Chat",
        1,
        1,
    )


# -- pin, hide, archive --------------------------------------------------------------------------


@pytest.mark.parametrize("fixture,unhides", [(f, False) for f in G20] + [(f, True) for f in G22])
def test_a_pin_covers_the_lineage_and_unhides_it_on_022_files(tmp_path, fixture, unhides):
    db, client = _app(tmp_path, fixture)
    r = post(client, "/sessions/g_chain_tip/pin", {"pinned": "1"})
    assert r.status_code == 200 and r.get_json()["pinned"] is True
    assert "Pinned session 'g_chain_tip'." in r.get_json()["message"]
    assert sql(db, "SELECT DISTINCT pinned FROM sessions WHERE id LIKE 'g_chain_%'") == [(1,)]
    post(client, "/sessions/g_hidden_session/pin", {"pinned": "1"})
    assert _one(db, "SELECT hidden FROM sessions WHERE id = 'g_hidden_session'") == (
        (0,) if unhides else (1,)
    )
    r = post(client, "/sessions/g_pin_root/pin", {"pinned": "0"})
    assert r.status_code == 200 and "Unpinned session 'g_pin_root'." in r.get_json()["message"]
    assert sql(
        db, "SELECT DISTINCT pinned FROM sessions WHERE id LIKE 'g_pin_r%' OR id = 'g_pin_tip'"
    ) == [(0,)]


def test_pin_and_hide_answer_htmx_with_their_buttons_and_forms_with_a_redirect(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    page = client.get("/sessions/g_words").get_data(as_text=True)
    assert 'action="/sessions/g_words/pin"' in page and 'action="/sessions/g_words/hide"' in page
    r = post(client, "/sessions/g_words/pin", {"pinned": "1"}, htmx=True)
    body = r.get_data(as_text=True)
    assert r.status_code == 200 and 'aria-pressed="true"' in body and ">Unpin<" in body
    assert "Pinned session" in r.headers["HX-Trigger"]
    r = post(client, "/sessions/g_words/hide", {"hidden": "1"}, browser_form=True)
    assert r.status_code == 302 and r.headers["Location"].endswith("/sessions/g_words")
    assert _one(db, "SELECT pinned, hidden FROM sessions WHERE id = 'g_words'") == (1, 1)
    assert post(client, "/sessions/g_words/hide", {"hidden": "maybe"}).status_code == 400
    # the list's rows carry the pin (an htmx button riding on the page's token)
    rows = client.get("/sessions").get_data(as_text=True)
    assert 'hx-post="/sessions/g_multimodel/pin"' in rows


def test_a_019_file_has_no_pins_to_set(tmp_path):
    db, client = _app(tmp_path, "hermes-v22-marks.db")
    sid = sql(db, "SELECT id FROM sessions LIMIT 1")[0][0]
    r = post(client, f"/sessions/{sid}/pin", {"pinned": "1"})
    assert r.status_code == 404 and "no pins" in r.get_data(as_text=True)
    assert 'class="flag-buttons"' not in client.get(f"/sessions/{sid}").get_data(as_text=True)


def test_pins_and_hides_are_off_read_only(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db", LOGBOOK_READ_ONLY=True)
    assert post(client, "/sessions/g_words/pin", {"pinned": "1"}).status_code == 403
    assert 'class="flag-buttons"' not in client.get("/sessions/g_words").get_data(as_text=True)
    assert _one(db, "SELECT pinned FROM sessions WHERE id = 'g_words'") == (0,)


def test_a_deliberate_archive_clears_the_idle_sweeps_stamp(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    flags = "SELECT archived, auto_archived FROM sessions WHERE id = 'g_stale_idle'"
    assert _one(db, flags) == (1, 1)
    r = post(client, "/archive", {"session": "g_stale_idle", "confirm": "yes"})  # again, by hand
    assert r.status_code == 200 and _one(db, flags) == (1, 0)
    r = post(client, "/archive", {"session": "g_stale_idle", "unarchive": "1", "confirm": "yes"})
    assert r.status_code == 200 and _one(db, flags) == (0, 0)


# -- delete ----------------------------------------------------------------------------------


def _lease(db, conversation: str, holder: str, expires_in: float) -> None:
    import sqlite3

    now = time.time()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO session_turn_leases (conversation_id, holder, acquired_at, expires_at) "
            "VALUES (?, ?, ?, ?)",
            (conversation, holder, now, now + expires_in),
        )
    conn.close()


def _pidns() -> str:
    from webui.hermes.changes import own_pid_namespace

    return own_pid_namespace() or "0"


def test_an_active_session_is_not_deleted_on_022_files(tmp_path):
    """A live turn lease on the conversation (kept under its first segment) protects every
    segment; Hermes's words; nothing changes."""
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _lease(db, "g_chain_root", f"pid={other.pid}:pidns={_pidns()}:turn=1", 300)
        before = sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = 'g_chain_mid'")
        r = post(client, "/sessions/g_chain_mid/delete", {})
        assert r.status_code == 409
        assert (
            "Cannot delete active session: session 'g_chain_mid' (or a delegate child) has an "
            "active turn lease or compression lock" in html.unescape(r.get_data(as_text=True))
        )
        assert sql(db, "SELECT COUNT(*) FROM messages WHERE session_id = 'g_chain_mid'") == before
        # htmx: the page stays as it is, the reason in a toast
        r = post(client, "/sessions/g_chain_mid/delete", {}, htmx=True)
        assert r.status_code == 409 and r.headers["HX-Reswap"] == "none"
        assert "Cannot delete active session" in r.headers["HX-Trigger"]
    finally:
        other.kill()
        other.wait()
    # Its holder is gone now (same PID namespace): the lease is stale, reclaimed, and the
    # delete goes ahead.
    r = post(client, "/sessions/g_chain_mid/delete", {})
    assert r.status_code == 200
    assert sql(db, "SELECT * FROM session_turn_leases WHERE conversation_id = 'g_chain_root'") == []
    assert _one(db, "SELECT 1 FROM sessions WHERE id = 'g_chain_mid'") is None


def test_an_expired_lease_or_a_020_file_does_not_stop_a_delete(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    _lease(db, "g_words", "pid=1:turn=1", -5)  # expired: reclaimed
    assert post(client, "/sessions/g_words/delete", {}).status_code == 200
    assert sql(db, "SELECT COUNT(*) FROM session_turn_leases") == [(0,)]
    db20, client20 = _app(tmp_path / "20", "hermes-v26-fresh.db")
    _lease(db20, "g_words", f"pid={os.getpid()}:turn=1", 300)  # 0.20 has no such guard
    assert post(client20, "/sessions/g_words/delete", {}).status_code == 200
    assert sql(db20, "SELECT COUNT(*) FROM session_turn_leases") == [(1,)]


def test_a_pinned_session_is_deleted_with_hermess_warning(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    page = client.get("/sessions/g_pin_tip/delete").get_data(as_text=True)
    assert "This session is pinned" in page
    r = post(client, "/sessions/g_pin_tip/delete", {}, htmx=True)
    assert r.status_code == 200
    assert "Warning: deleting a pinned session 'g_pin_tip'." in r.headers["HX-Trigger"]


def test_a_delete_takes_usage_rows_and_prompts_no_one_uses_and_leaves_generations(tmp_path):
    import sqlite3

    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    conn = sqlite3.connect(db)
    with conn:  # a prompt row nobody references (left by an older writer): Hermes sweeps it
        conn.execute("INSERT INTO system_prompts (hash, prompt) VALUES ('orphan', 'old text')")
    conn.close()
    gens = sql(db, "SELECT * FROM conversation_generations ORDER BY 1, 2")
    shared = _one(db, "SELECT system_prompt_hash FROM sessions WHERE id = 'g_multimodel'")[0]
    r = post(client, "/sessions/g_multimodel/delete", {}, htmx=True)
    assert r.status_code == 200
    assert sql(
        db, "SELECT COUNT(*) FROM session_model_usage WHERE session_id = 'g_multimodel'"
    ) == [(0,)]
    assert _one(db, "SELECT 1 FROM system_prompts WHERE hash = 'orphan'") is None
    assert _one(db, "SELECT 1 FROM system_prompts WHERE hash = ?", (shared,)) == (
        1,
    )  # others use it
    assert sql(db, "SELECT * FROM conversation_generations ORDER BY 1, 2") == gens
    post(client, "/sessions/g_prompt_changed/delete", {})
    hashes = {h for (h,) in sql(db, "SELECT hash FROM system_prompts")}
    used = {h for (h,) in sql(db, "SELECT system_prompt_hash FROM sessions") if h}
    assert hashes == used


# -- prune -----------------------------------------------------------------------------------


def test_prune_batches_hold_whole_conversations():
    from webui.hermes import pruning

    order = ["a", "x", "b", "c", "y", "d"]
    links = [("b", "a"), ("c", "b"), ("y", "x")]
    groups = pruning.groups(order, links)
    assert groups == [["a", "b", "c"], ["x", "y"], ["d"]]
    batch, rest = pruning.batches(groups, 2)
    assert batch == ["a", "b", "c"] and rest == [["x", "y"], ["d"]]  # never cut, even if over
    batch, rest = pruning.batches(rest, 2)
    assert batch == ["x", "y"] and rest == [["d"]]
    assert pruning.kept({"a", "b"}, [("a", "b"), ("b", "c")]) == {"a", "b"}
    assert pruning.kept({"a", "b", "c"}, [("a", "b"), ("b", "c")]) == set()


@pytest.mark.parametrize("stop_at", [2, 3])
def test_a_prune_stopped_between_batches_never_splits_a_conversation(
    tmp_path, monkeypatch, stop_at
):
    """0.20's prune of `--end-reason compression` takes g_pin_root and the first two segments
    of the g_chain_ conversation (the open tip stays). Batches of one session at most, stopped
    before the second or third: the two chain segments go together or not at all (in started
    order they were two batches, and a stop between them left the middle one orphaned)."""
    from webui.db.changes import lane as lane_module
    from webui.db.changes import prune as prune_module

    db, client = _app(tmp_path, "hermes-v26-fresh.db")
    monkeypatch.setattr(prune_module, "PRUNE_BATCH", 1)
    monkeypatch.setattr(prune_module, "adapt", lambda size, took, lo, hi: 1)
    calls = {"n": 0}

    def stop(label: str) -> None:
        if label == "prune: intent":
            calls["n"] += 1
            if calls["n"] == stop_at:
                raise RuntimeError("stopped")

    monkeypatch.setattr(lane_module, "STEP", stop)
    r = post(client, "/prune", {"end_reason": "compression", "confirm": "yes"})
    left = {i for (i,) in sql(db, "SELECT id FROM sessions WHERE id LIKE 'g_chain_%'")}
    if stop_at == 2:  # before the chain's batch: all of it stays
        assert r.status_code == 503 and "stopped" in r.get_json()["error"]
        assert left == {"g_chain_root", "g_chain_mid", "g_chain_tip"}
    else:  # the chain was one batch: there is no third
        assert r.status_code == 200 and r.get_json()["deleted"] == 3
        assert left == {"g_chain_tip"}
    assert calls["n"] == stop_at if stop_at == 2 else calls["n"] == 2


def test_a_prune_skips_what_a_live_turn_protects_and_names_it(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    _lease(db, "g_home_1", f"pid={os.getpid()}:turn=1", 300)
    r = post(client, "/prune", {"title": "Home", "confirm": "yes"})
    assert r.status_code == 200, r.get_data(as_text=True)
    body = r.get_json()
    assert "g_home_1" in body["busy"] and body["deleted"] >= 1
    assert _one(db, "SELECT 1 FROM sessions WHERE id = 'g_home_1'") == (1,)


# -- living beside 0.22 -----------------------------------------------------------------------


def _holder(db):
    proc = subprocess.Popen(
        [sys.executable, "-c", f"import sqlite3, time; c = sqlite3.connect({str(db)!r}); "
         "c.execute('SELECT 1 FROM sessions').fetchone(); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_a_bulk_removal_is_refused_while_another_process_holds_a_022_file(tmp_path):
    db, client = _app(tmp_path, "hermes-v31-fresh.db")
    holder = _holder(db)
    try:
        for url, data in (
            ("/prune", {"source": "telegram", "confirm": "yes"}),
            ("/coldstore", {"session": "g_multimodel", "archived": "include", "confirm": "yes"}),
        ):
            r = post(client, url, {**data, "format": "json"})
            text = r.get_data(as_text=True)
            assert r.status_code == 409, (url, text[:300])
            assert f"PID {holder.pid} (python" in text and "state.db" in text
            assert "Override" in text
            # a form without JavaScript: the page names them and offers the override
            r = post(client, url, data, browser_form=True)
            page = r.get_data(as_text=True)
            assert r.status_code == 409 and 'name="force" value="1"' in page
            assert "rewriting the store under a live writer" in page
        assert sql(db, "SELECT COUNT(*) FROM sessions WHERE source = 'telegram'")[0][0] > 0
        r = post(client, "/prune", {"source": "telegram", "confirm": "yes", "force": "1"})
        assert r.status_code == 200 and r.get_json()["deleted"] > 0
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


def test_a_020_file_has_no_held_store_check(tmp_path):
    db, client = _app(tmp_path, "hermes-v26-fresh.db")
    holder = _holder(db)
    try:
        r = post(client, "/prune", {"source": "telegram", "confirm": "yes"})
        assert r.status_code == 200 and r.get_json()["deleted"] > 0
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


# -- what a file allows, said everywhere ------------------------------------------------------


@pytest.mark.parametrize(
    "fixture,config,line",
    [
        ("hermes-v31-fresh.db", {}, "changes: allowed (Hermes 0.22.2 rules)"),
        ("hermes-v26-fresh.db", {}, "changes: allowed (Hermes 0.20.1 rules)"),
        ("hermes-v22-marks.db", {}, "changes: allowed (Hermes 0.19.0 rules)"),
        ("hermes-v31-fresh.db", {"LOGBOOK_READ_ONLY": True}, "read-only (--read-only)"),
        ("hermes-v31-cjk.db", {}, "changes: renames, pins and archiving only"),
    ],
)
def test_every_page_says_what_changes_the_file_allows(tmp_path, fixture, config, line):
    db, client = _app(tmp_path, fixture, **config)
    for url in ("/sessions", "/stats", "/search?q=nginx", "/prune"):
        assert line in client.get(url).get_data(as_text=True), url
    page = client.get("/sessions").get_data(as_text=True)
    removals = "read-only" not in line and "only" not in line
    assert ('href="/prune"' in page) == removals and ('href="/coldstore"' in page) == removals
    assert ('href="/archive"' in page) == ("read-only" not in line)


def test_a_newer_schema_keeps_changes_off_and_says_why(tmp_path):
    import sqlite3

    db = copy_fixture("hermes-v31-fresh.db", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE schema_version SET version = 32")
    client = make_app(db, tmp_path / "inst").test_client()
    page = client.get("/sessions").get_data(as_text=True)
    assert "changes: off — This database uses schema v32, newer than Logbook knows (v31)" in page
    assert 'href="/prune"' not in page and 'href="/archive"' not in page
    r = post(client, "/sessions/g_words/pin", {"pinned": "1"})
    assert r.status_code == 403 and "schema v32" in r.get_data(as_text=True)


def test_the_startup_line_names_the_files_rules():
    from types import SimpleNamespace

    from webui.cli import access_lines
    from webui.hermes.changes import changes_line

    local = SimpleNamespace(read_only=False, insecure=False, private=False, port=1, host="h")
    ok = changes_line(hermes="Hermes Agent 0.22.2", refusal=None, removal_refusal=None)
    assert access_lines(local, None, "none", ok)[1] == (
        "changes: allowed (Hermes 0.22.2 rules) from this machine's browsers (CSRF-protected, "
        "no login)"
    )
    off = changes_line(
        hermes="Hermes Agent 0.22.2", refusal="schema v40 is newer", removal_refusal=None
    )
    assert access_lines(local, None, "none", off)[1] == "changes: off — schema v40 is newer"
    ro = SimpleNamespace(**{**vars(local), "read_only": True})
    assert access_lines(ro, None, "none", ok)[1] == "changes: off: read-only (--read-only)"
    remote = SimpleNamespace(**{**vars(local), "insecure": True})
    assert access_lines(remote, "t" * 20, "--token", ok)[1].endswith("(Hermes 0.22.2 rules)")


def test_a_cjk_file_whose_tokenizer_cannot_load_refuses_removals_only(tmp_path):
    """This process cannot load SQLite extensions: the CJK file takes renames, pins and
    archiving, and refuses delete, prune and cold storage with the reason, changing nothing
    (tests/test_oracle_coldstore.py runs them with the tokenizer loaded)."""
    import sqlite3

    db, client = _app(tmp_path, "hermes-v31-cjk.db")
    count = "SELECT (SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM messages)"
    before = sql(db, count)
    for url, data in (
        ("/sessions/g_multimodel/delete", {}),
        ("/prune", {"source": "telegram", "confirm": "yes"}),
        ("/coldstore", {"session": "g_multimodel", "archived": "include", "confirm": "yes"}),
        ("/sessions/bulk", {"session": "g_multimodel", "action": "delete", "confirm": "yes"}),
    ):
        r = post(client, url, data)
        text = r.get_data(as_text=True)
        assert r.status_code == 409 and "cjk_unicode61" in text and "tokenizer" in text, url
    assert sql(db, count) == before
    assert post(client, "/sessions/g_multimodel/title", {"title": "Still mine"}).status_code == 200
    assert post(client, "/sessions/g_multimodel/pin", {"pinned": "1"}).status_code == 200
    page = client.get("/sessions/g_multimodel").get_data(as_text=True)
    assert "Delete…" not in page and 'action="/sessions/g_multimodel/pin"' in page
    # the triggers are as Hermes left them (Logbook never drops them)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    conn.close()
    assert {"messages_fts_cjk_insert", "messages_fts_cjk_delete"} <= names
