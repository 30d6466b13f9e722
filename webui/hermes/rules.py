"""Which Hermes's rules apply to a database: the rules follow the file.

A database written by Hermes 0.19 (schema 22 and newer) is read with Hermes 0.19.0's rules;
a schema-11 file with the rules of the documents Logbook was built from (``tests/data/
reference``); older files as close to those as their columns allow. Every rule family picks its
variant here, once, from the schema version, so views and SQL never test versions themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

HERMES_0_19_SCHEMA = 22


@dataclass(frozen=True)
class Rules:
    schema: int | None
    hermes: str  # whose behaviour these rules reproduce, in words
    search: str  # search dialect: "v8", "v11" or "v22" (webui.hermes.search)
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


def rules_for(schema_version: int | None) -> Rules:
    if schema_version is not None and schema_version >= HERMES_0_19_SCHEMA:
        return Rules(
            schema_version,
            "Hermes Agent 0.19.0",
            "v22",
            delete_cascades=True,
            export_active_by_id=True,
            rename_takes_from_ancestor=True,
            messages_by_id=True,
        )
    if schema_version is not None and schema_version >= 11:
        return Rules(schema_version, "Hermes at schema 11 (the reference documents)", "v11")
    return Rules(schema_version, "Hermes at schema 8 (as close as its columns allow)", "v8")
