"""The inventory of every value Logbook keeps between requests: one entry per kind, with what
it is, how long it may lag, what drops it and which modules hold it. The README's "What may
lag" table mirrors it row for row (tests/test_keep.py compares them both ways, and checks that
every module that caches through webui.keep is named here). The policies' numbers come from
webui.keep itself, so a changed time-to-live changes this text and the README must follow."""

from __future__ import annotations

from dataclasses import dataclass

from webui.keep import CHAINS, EXPORT_SIZES, HIDDEN_IDS, SHARED_FIGURES, Policy


@dataclass(frozen=True)
class Cached:
    """One kind of value Logbook keeps between requests: a row of the README's "What may lag"
    table (``name``, ``what``, ``how_long``, ``dropped_by``), and the modules that hold it."""

    name: str
    what: str
    how_long: str
    dropped_by: str
    owners: tuple[str, ...]


def says(seconds: float) -> str:
    """Seconds as the README says them."""
    words = {60: "a minute", 300: "5 minutes", 3600: "an hour"}
    return words.get(int(seconds), f"{seconds:g} s") if seconds == int(seconds) else f"{seconds} s"


def _swr(p: Policy) -> str:
    return f"up to {says(p.stale_while_revalidate)} old served while one refresh works out the next"


OWN = "Logbook's own changes to the file"
INVENTORY: tuple[Cached, ...] = (
    Cached(
        "Whole-table figures",
        "The list's counts and menus (facets, models, sources), people, workspaces, branches, "
        "chats, the sizes behind export estimates and list orders",
        "While no session appears or goes (the sessions token); in-place edits by others (a "
        f"title, an end) within {says(SHARED_FIGURES.ttl or 0)}; {_swr(SHARED_FIGURES)}; "
        "also on disk (`kept-*/`) for the first page after a restart",
        OWN,
        (
            "db/sessions/keeping.py",
            "db/sessions/list_rules.py",
            "db/sessions/orders.py",
            "web/views/sessions.py",
            "db/history/chats.py",
        ),
    ),
    Cached(
        "Compression chains",
        "Hermes's compression chains of the file, their tips, and its part of the whole history",
        f"While no session appears or goes; an end within {says(CHAINS.ttl or 0)}; "
        f"{_swr(CHAINS)}; also on disk",
        OWN,
        ("db/sessions/store.py", "db/stores/history.py"),
    ),
    Cached(
        "Sessions token",
        "How many sessions there are and the newest start (the version of the two above)",
        "Until anyone commits to the file (SQLite's `data_version`)",
        f"{OWN}, each batch of a prune",
        ("db/sessions/keeping.py", "db/sessions/store.py"),
    ),
    Cached(
        "List orders",
        "A list's (key, id) order by last activity, tokens, cost or messages, per filter",
        "Until a message is added or a session appears or goes (moved in place when messages "
        "were only appended); orders by counters (tokens, cost) within 10 s",
        f"{OWN}, each batch of a prune",
        ("db/sessions/store.py", "db/sessions/orders.py"),
    ),
    Cached(
        "Conversation figures",
        "A conversation's header figures, its census (which rows it paints), its tool results",
        "Until anyone commits to the file; a census that only grew is extended by its new rows",
        OWN,
        ("db/sessions/messages.py",),
    ),
    Cached(
        "Hidden message ids",
        "The rewound and hidden messages a search leaves out of its total",
        "While no session appears or goes; others' rewinds and hidden rows within "
        f"{says(HIDDEN_IDS.ttl or 0)}; {_swr(HIDDEN_IDS)}",
        OWN,
        ("db/search/store.py", "db/search/limits.py"),
    ),
    Cached(
        "Search's recent bound",
        "The newest time below the recent window, which lets a substring search answer from "
        "the newest messages",
        "For the process, 64 windows (an upper bound stays one: deletes only lower the truth)",
        "Nothing: evicted least recently used first",
        ("db/search/store.py", "db/search/substring.py"),
    ),
    Cached(
        "Export estimate",
        "A sample's average sizes behind an export's size estimate",
        f"Within {says(EXPORT_SIZES.ttl or 0)}",
        OWN,
        ("db/sessions/export.py",),
    ),
    Cached(
        "Statistics",
        "A /stats report per query",
        "While nobody commits to the file; beside a writing gateway reused for 3 s "
        "(`LOGBOOK_STATS_REUSE_S`), then up to a minute old (`LOGBOOK_STATS_STALE_S`) served "
        "while one background thread works out the next, the page saying how old; a partial "
        "report is not kept",
        OWN,
        ("db/stats/report.py",),
    ),
    Cached(
        "Storage, Files and Reliability",
        "Answers read from the digest, and Reliability's unattended sessions",
        "As the statistics, under the digest's mark (the digest reads what is new within a "
        "page's budget)",
        OWN,
        ("web/digests.py", "web/views/reliability.py"),
    ),
    Cached(
        "Table sizes",
        "dbstat's measures of the tables (Storage), in the digest file",
        "At most an hour old once the file changed (the page says when each was measured)",
        "Measuring again",
        ("db/digest/objects.py",),
    ),
    Cached(
        "Other stores' answers",
        "An archive's or replica's part of a merged page (list, statistics, chats, people, "
        "workspaces)",
        "Until its file changes (an archive's signature, checked at most once a second; a "
        "replica's `data_version`)",
        "The store going away (removed, replaced, no longer configured)",
        ("db/stores/history.py", "db/history/stats.py", "db/history/chats.py"),
    ),
    Cached(
        "Merged views",
        "The whole history's merges of the stores' parts: copies and chains across stores, "
        "statistics, chats, people, workspaces",
        "While every store's part is the same cached value",
        "Any part changing",
        ("db/stores/history.py", "db/history/stats.py", "db/history/chats.py"),
    ),
    Cached(
        "Renderings",
        "Rendered Markdown, JSON, tool calls, message rows and page fragments, by their input",
        "For the process (the same input renders the same), bounded by size, none over an "
        "eighth of its cache",
        "Nothing: evicted least recently used first",
        (
            "present/markdown.py",
            "present/json_view.py",
            "present/rows.py",
            "present/slow_render.py",
            "present/fragments.py",
        ),
    ),
    Cached(
        "Pure lookups",
        "Code lexers, timestamps' local times, a search's hidden ids as JSON",
        "For the process, bounded by count",
        "Nothing: evicted least recently used first",
        ("present/markdown.py", "present/filters.py", "db/search/limits.py"),
    ),
    Cached(
        "Folder scans",
        "Which archive files and Hermes profiles there are",
        "Archive folders looked at every 5 s, each file checked every 1 s; profiles every 3 s",
        "A change Logbook makes to them (looked at again at once)",
        ("db/stores/store_set.py", "db/stores/profiles.py"),
    ),
)
