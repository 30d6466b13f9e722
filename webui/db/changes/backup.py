"""Export, then delete what was verifiably exported (Hermes's ``--delete-after-verified``),
made safe beside a live writer.

For each session (with the delegate subagent runs Hermes 0.19 deletes with it) Logbook writes,
into one backup folder of its instance directory:

- ``<id>-<slug>.md``: Hermes's Markdown file, byte for byte `hermes sessions export --format
  md` (front matter, the SHA-256 of its body; messages undone by /rewind left out, as
  there), for people;
- ``sessions.jsonl``: the complete records (every column, every message, rewound ones too),
  for machines — what a restore would need;
- ``manifest.jsonl``: Hermes's manifest lines.

Files are written to a temporary name, flushed to disk and renamed, then read back: the
Markdown must pass Hermes's verification, and the JSONL must parse back to exactly the records
read from the database, holding every message id the database had. Only then is the session
deleted, and only if no message arrived after the export: the delete transaction checks that
no message newer than the exported ones exists. Hermes itself checks neither; a gateway that
appends to the session between export and delete would otherwise lose that message.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webui.db.errors import LogbookDBError
from webui.hermes import export_markdown, exports


class BackupFailed(LogbookDBError):
    """The backup could not be written or did not verify: nothing was deleted."""

    status = 409


class ChangedSinceBackup(LogbookDBError):
    status = 409


@dataclass
class Backup:
    folder: Path
    sessions: list[str] = field(default_factory=list)
    messages: int = 0
    files: list[str] = field(default_factory=list)


def new_folder(root: Path, label: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "_" for ch in label)
    folder = root / f"{stamp}-{safe[:40]}-{uuid.uuid4().hex[:6]}"
    try:
        folder.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        raise BackupFailed(
            f"No backup folder could be made in {root}: {exc.strerror or exc}."
        ) from exc
    return folder


def _write_durably(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _append_durably(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _roundtrip(record: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(record, ensure_ascii=False, default=str))


def write_and_verify(folder: Path, records: list[dict[str, Any]]) -> Backup:
    """Write the records' files into ``folder`` and read them back. Raises BackupFailed, and
    then nothing may be deleted."""
    backup = Backup(folder)
    jsonl = folder / "sessions.jsonl"
    # A prune backs many sessions up into one folder: read back only what this call appends.
    start = jsonl.stat().st_size if jsonl.exists() else 0
    try:
        people = [exports.without_rewound(rec) for rec in records]
        for rec, shown in zip(records, people, strict=True):
            # A safe name inside the folder whatever the session id holds (a slash, "..").
            name = export_markdown.file_name(shown, "md")
            now = time.time()
            data = export_markdown.document(shown, "md", now).encode("utf-8")
            _write_durably(folder / name, data)
            _append_durably(
                jsonl, (json.dumps(rec, ensure_ascii=False, default=str) + "\n").encode("utf-8")
            )
            _append_durably(
                folder / "manifest.jsonl",
                export_markdown.manifest_line(
                    shown, name, "md", hashlib.sha256(data).hexdigest(), now
                ).encode("utf-8"),
            )
            backup.files.append(name)
        # Read everything back from disk before anything is deleted.
        for rec, name in zip(people, backup.files, strict=True):
            ok, reason = export_markdown.verify((folder / name).read_text(encoding="utf-8"), rec)
            if not ok:
                raise BackupFailed(f"The Markdown backup of {rec['id']} did not verify: {reason}.")
        with open(jsonl, "rb") as fh:
            fh.seek(start)
            back = [json.loads(line) for line in fh.read().decode("utf-8").splitlines()]
    except (OSError, ValueError) as exc:
        raise BackupFailed(f"The backup could not be written in {folder}: {exc}") from exc
    for rec, read in zip(records, back, strict=False):
        if read != _roundtrip(rec):
            raise BackupFailed(f"The JSONL backup of {rec['id']} does not read back the same.")
    if len(back) != len(records):
        raise BackupFailed("The JSONL backup is missing records.")
    backup.sessions = [r["id"] for r in records]
    backup.messages = sum(len(r.get("messages") or []) for r in records)
    backup.files.append("sessions.jsonl")
    return backup


def newest_message_ids(records: list[dict[str, Any]]) -> dict[str, int]:
    """Per session, the highest message id the backup holds (0 for none): anything above it
    arrived after the export."""
    return {
        r["id"]: max(
            (int(m["id"]) for m in r.get("messages") or [] if m.get("id") is not None), default=0
        )
        for r in records
    }
