"""Finishing or undoing one journal entry a unit left behind, by its kind: a delete or a prune
batch (webui.db.changes.removal), a move out to cold storage or back (webui.db.changes.move_replay).

The lane calls this with its lock held, before any new unit begins; it is handed to the lane
when the lane is made (webui.db.changes.actions), so the lane itself knows no kind of work."""

from __future__ import annotations

from typing import TYPE_CHECKING

from webui.db.changes import move_replay, removal

if TYPE_CHECKING:
    from webui.db.changes.journal import Entry
    from webui.db.changes.lane import Lane


def replay_entry(lane: Lane, entry: Entry) -> tuple[str, list[str]]:
    """(a sentence saying what was done, the sessions it removed from the live file)."""
    if entry.kind in ("delete", "prune"):
        return removal.replay(lane, entry)
    if entry.kind == "out":
        return move_replay.replay_out(lane, entry)
    return move_replay.replay_back(lane, entry)
