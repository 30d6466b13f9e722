"""One lane for every change to a file.

Every change Logbook makes — a rename, an archive flag, a delete, a prune batch, a conversation
moved to cold storage or back — is a *unit* of the live file's lane (``lane.py``): the unit
takes the file's one lock (``lock.py``: this process's threads in turn, then an ``flock`` for
other processes), replays whatever the journal holds, writes its intent to the journal
(``journal.py``) before its first change, and removes it after its last. Its transactions go
through the Writer in the one batch loop (``batches.py``): short ``BEGIN IMMEDIATE``
transactions, each followed by the Writer's pause that lets the gateway in; the Writer refuses
to write outside a unit. Jobs (prune, cold storage) are sequences of units and are kept in one
registry (``jobs.py``). What a delete, a prune and a move do inside their units is in
``removal.py`` and ``moving.py``; the archive file a move trusts, in ``archive_file.py``.

Why no conversation is lost or doubled. Only the lock holder writes to the live file, to an
archive file or to the journal, so units never interleave and every journal entry that a new
holder finds was cut short — by a kill, a crash or an error — and nothing else is running. The
holder replays those entries before it changes anything, so every unit begins from a state in
which each conversation is whole in exactly one file. A unit changes nothing before its intent
is durable, and each step it takes moves a conversation only in a direction its entry lets the
replay finish or undo: a removal only takes messages up to the newest one it recorded and is
finished by the replay (a session that got a newer message is kept and named); a move to cold
storage removes nothing from the live file until its copy, read back from the archive's path
through a new connection, matched the rows read, and that match is in the journal
(``verified``) — before it the replay takes the copy out of the archive, after it the replay
finishes the removal, or, if the archive is no longer the file it checked or the conversation
changed, puts back from the archive what had left the live file; a move back adds messages no
session owns until one last transaction adds the session rows, and its replay either takes
those messages out again or, once the rows arrived and match, removes the archive's copy.
Every one of these replays can itself be cut and replayed again: each step only completes the
same transition. So after any sequence of units and kills, once the journal is empty each
conversation is whole in exactly one file. ``tests/test_lane_model.py`` checks this against a
model with random sequences of deletes, prunes, moves both ways and kill -9 at every step."""

from webui.db.changes.jobs import JOBS, Job
from webui.db.changes.lane import Lane, Unit

__all__ = ["JOBS", "Job", "Lane", "Unit"]
