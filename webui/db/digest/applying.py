"""Adding what a batch of messages holds to the digest (inside the caller's transaction of
the digest file), and taking sessions out of it again: bytes by session and by (source,
month), tool use and failures, failed turns, calls waiting for their results, runs of
near-same calls (retry loops) and the files each call changed."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any

from webui.db import sql
from webui.db.digest.reading import Reading, facts
from webui.db.digest.tables import NO_MODEL, SIZES, chunks, day_of, month_of, pick
from webui.hermes import file_changes as fc
from webui.hermes import tool_runs
from webui.hermes.paths import relative
from webui.hermes.tool_results import classify

NO_TOOL = "(no name)"


class Applier:
    def __init__(self, conn: sqlite3.Connection, reading: Reading, generation: str):
        self.conn = conn
        self.reading = reading
        self.gen = generation

    def _sessions(self, ids) -> dict[str, tuple]:
        """{id: (source, month, workspace, cwd, day, model)} of these sessions as the digest
        has them."""
        out: dict[str, tuple] = {}
        for part in chunks(sorted(ids)):
            out.update(
                (r[0], r[1:])
                for r in self.conn.execute(
                    "SELECT session_id, source, month, workspace, cwd, day, model FROM main.sess "
                    "WHERE "
                    f"session_id IN ({sql.in_list(len(part))})",
                    part,
                )
            )
        return out

    # -- sizes --------------------------------------------------------------------------------

    def sizes(self, rows: list[dict[str, Any]]) -> int:
        known = self._sessions({r["session_id"] for r in rows})
        months: dict[tuple, list[int]] = defaultdict(lambda: [0] * len(SIZES))
        updates = []
        total = 0
        for r in rows:
            d = [int(r["n"]), int(r["text_b"]), int(r["call_b"]), int(r["tool_b"]),
                 int(r["reasoning_b"]), int(r["other_b"]), self.reading.fts_bytes(r)]  # fmt: skip
            updates.append((*d, sum(d[1:6]), r["session_id"]))
            s = known.get(r["session_id"])
            if s is not None:
                total += d[0]
                acc = months[(s[0], s[1])]
                acc[:] = [a + b for a, b in zip(acc, d, strict=True)]
        self.conn.executemany(
            "UPDATE main.sess SET n = n + ?, text_b = text_b + ?, call_b = call_b + ?, "
            "tool_b = tool_b + ?, reasoning_b = reasoning_b + ?, other_b = other_b + ?, "
            "fts_b = fts_b + ?, all_b = all_b + ? WHERE session_id = ?",
            updates,
        )
        self._months(months, 0)
        return total

    def _months(self, months: dict[tuple, list[int]], sessions: int) -> None:
        self.conn.executemany(
            "INSERT INTO main.bytes_month (source, month, sessions, "
            f"{', '.join(SIZES)}) VALUES (?, ?, ?, {sql.in_list(len(SIZES))}) "
            "ON CONFLICT DO UPDATE SET sessions = sessions + excluded.sessions, "
            + ", ".join(f"{k} = {k} + excluded.{k}" for k in SIZES),
            [(src or "", month or "", sessions, *v) for (src, month), v in months.items()],
        )

    # -- calls ---------------------------------------------------------------------------------

    def calls(self, rows: list[dict[str, Any]], args: dict[tuple[int, int], str]) -> None:
        """Tool calls in message order: tool use, turns, calls waiting for a result, runs of
        near-same calls and the files changed."""
        if not rows:
            return
        sessions = {r["session_id"] for r in rows}
        known = self._sessions(sessions)
        runs = self._runs(sessions)
        use: dict[tuple, int] = defaultdict(int)
        turns: dict[str, set] = defaultdict(set)
        pending, changes = [], []
        for r in rows:
            sid, tool = r["session_id"], r["tool"]
            if tool is None:
                continue
            use[(sid, tool)] += 1
            turns[sid].add(r["message_id"])
            if r["call_id"]:
                pending.append((sid, r["call_id"], r["message_id"], tool))
            self._run(runs, r)
            if tool in fc.FILE_TOOLS:
                changes += self._changes(r, args, known.get(sid))
        self.conn.executemany(
            "INSERT INTO main.tool_use (session_id, tool, calls) VALUES (?, ?, ?) "
            "ON CONFLICT DO UPDATE SET calls = calls + excluded.calls",
            [(*k, v) for k, v in use.items()],
        )
        per_session: dict[str, int] = defaultdict(int)
        tool_days: dict[tuple, list[int]] = defaultdict(lambda: [0] * 5)
        model_days: dict[tuple, list[int]] = defaultdict(lambda: [0] * 4)
        for (sid, tool), v in use.items():
            per_session[sid] += v
            day = self._day(known, sid)
            if day is not None:
                tool_days[(day[0], tool)][0] += v
        for sid in per_session:
            day = self._day(known, sid)
            if day is not None:
                model_days[day][0] += len(turns[sid])
        self.conn.executemany(
            "UPDATE main.sess SET calls = calls + ?, turns = turns + ? WHERE session_id = ?",
            [(per_session[s], len(turns[s]), s) for s in per_session],
        )
        self.daily(tool_days, model_days)
        self.conn.executemany("INSERT OR REPLACE INTO main.pending VALUES (?, ?, ?, ?)", pending)
        self.conn.executemany(
            "INSERT INTO main.changes (session_id, message_id, call_index, change_index, call_id, "
            "tool, action, via, path, workspace, rel, timestamp, full, size, other) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            changes,
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO main.runs VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(s, *v) for s, v in runs.items() if v is not None],
        )

    @staticmethod
    def _day(known: dict[str, tuple], sid: str) -> tuple | None:
        """(day, model) of a session with a day (its figures go into the daily sums)."""
        s = known.get(sid)
        if s is None or s[4] is None:
            return None
        return (s[4], s[5] or NO_MODEL)

    def daily(self, tool_days: dict, model_days: dict) -> None:
        """Add to the daily sums: ``tool_days`` {(day, tool): [calls, results, failures,
        timeouts, exits]}, ``model_days`` {(day, model): [turns, failed_turns, results,
        failures]} (negative to take away)."""
        self.conn.executemany(
            "INSERT INTO main.tool_day VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
            "calls = calls + excluded.calls, results = results + excluded.results, "
            "failures = failures + excluded.failures, timeouts = timeouts + excluded.timeouts, "
            "exits = exits + excluded.exits",
            [(*k, *v) for k, v in tool_days.items() if any(v)],
        )
        self.conn.executemany(
            "INSERT INTO main.model_day VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
            "turns = turns + excluded.turns, failed_turns = failed_turns + excluded.failed_turns, "
            "results = results + excluded.results, failures = failures + excluded.failures",
            [(*k, *v) for k, v in model_days.items() if any(v)],
        )

    def _runs(self, sessions) -> dict[str, list | None]:
        out: dict[str, list | None] = dict.fromkeys(sessions)
        for part in chunks(sorted(sessions)):
            for r in self.conn.execute(
                "SELECT session_id, tool, sig, length, first_message, last_message, loop_id "
                f"FROM main.runs WHERE session_id IN ({sql.in_list(len(part))})",
                part,
            ):
                out[r[0]] = list(r[1:])
        return out

    def _run(self, runs: dict[str, list | None], r: dict[str, Any]) -> None:
        """One call extends its session's run of near-same calls or starts a new one; a run
        that reaches LOOP_MIN calls is a retry loop (a row of ``loops``, kept up to date)."""
        sid, tool, mid = r["session_id"], r["tool"], r["message_id"]
        head = r["args_head"]
        sig = tool_runs.signature_of(head, r["args_len"])
        run = runs.get(sid)
        if run is not None and run[0] == tool and tool_runs.near_same(run[1], sig):
            run[1], run[2], run[4] = sig, run[2] + 1, mid
            if run[2] == tool_runs.LOOP_MIN:
                cur = self.conn.execute(
                    "INSERT INTO main.loops (session_id, tool, first_message, last_message, "
                    "calls, sample) VALUES (?, ?, ?, ?, ?, ?)",
                    (sid, tool, run[3], mid, run[2], str(head or "")[:300]),
                )
                run[5] = cur.lastrowid
            elif run[2] > tool_runs.LOOP_MIN and run[5] is not None:
                self.conn.execute(
                    "UPDATE main.loops SET calls = ?, last_message = ? WHERE id = ?",
                    (run[2], mid, run[5]),
                )
        else:
            runs[sid] = [tool, sig, 1, mid, mid, None]

    def _changes(self, r: dict[str, Any], args: dict, session: tuple | None) -> list[tuple]:
        workspace, cwd = (session[2], session[3]) if session else (None, None)
        raw = args.get((r["message_id"], r["idx"]))
        if raw is not None:
            found = fc.changes(r["tool"], raw, cwd)
        elif isinstance(r.get("big_path"), str):  # arguments too long to read: the path only
            found = fc.changes(
                r["tool"], {"path": r["big_path"], "content": None, "mode": "replace"}, cwd
            )
        else:
            found = []
        out = []
        for i, c in enumerate(found):
            size = len(c.content.encode("utf-8", "replace")) if c.content is not None else None
            out.append(
                (
                    r["session_id"],
                    r["message_id"],
                    r["idx"],
                    i,
                    r["call_id"],
                    r["tool"],
                    c.action,
                    c.via,
                    c.path,
                    workspace,
                    relative(c.path, workspace),
                    r["timestamp"],
                    int(c.full),
                    size,
                    c.other,
                )  # fmt: skip
            )
        return out

    # -- results --------------------------------------------------------------------------------

    def results(self, rows: list[dict[str, Any]]) -> None:
        """Tool results in message order: each is matched to its call (its turn, its tool
        when the row names none) and judged by Hermes's rule."""
        if not rows:
            return
        waiting = self._pending({(r["session_id"], r["call_id"]) for r in rows if r["call_id"]})
        known = self._sessions({r["session_id"] for r in rows})
        use: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        per_session: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        failed_turns, landed, done = [], [], []
        for r in rows:
            sid = r["session_id"]
            call = waiting.get((sid, r["call_id"])) if r["call_id"] else None
            tool = (
                r["tool"]
                if isinstance(r["tool"], str) and r["tool"]
                else (call[1] if call else None)
            )
            outcome = classify(tool, facts(r), self.gen)
            u = use[(sid, tool or NO_TOOL)]
            u[0] += 1
            u[1] += outcome.failed
            u[2] += outcome.kind == "timeout"
            u[3] += outcome.kind == "exit"
            p = per_session[sid]
            p[0] += 1
            p[1] += outcome.failed
            p[2] += outcome.kind == "timeout"
            p[3] += outcome.kind == "exit"
            if call is not None:
                done.append((sid, r["call_id"]))
                if call[1] in fc.FILE_TOOLS:  # the files it changed carry its outcome
                    landed.append((int(outcome.failed), sid, r["call_id"]))
                if outcome.failed:
                    failed_turns.append((sid, call[0]))
        self.conn.executemany(
            "INSERT INTO main.tool_use (session_id, tool, results, failures, timeouts, exits) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET results = results + "
            "excluded.results, failures = failures + excluded.failures, timeouts = timeouts + "
            "excluded.timeouts, exits = exits + excluded.exits",
            [(*k, *v) for k, v in use.items()],
        )
        self.conn.executemany(
            "UPDATE main.sess SET results = results + ?, failures = failures + ?, "
            "timeouts = timeouts + ?, exits = exits + ? WHERE session_id = ?",
            [(*v, s) for s, v in per_session.items()],
        )
        new_failed: dict[str, int] = defaultdict(int)
        fresh = set(failed_turns) - self._failed_already(failed_turns)
        self.conn.executemany("INSERT INTO main.failed_turns VALUES (?, ?)", sorted(fresh))
        for sid, _mid in fresh:
            new_failed[sid] += 1
        self.conn.executemany(
            "UPDATE main.sess SET failed_turns = failed_turns + ? WHERE session_id = ?",
            [(v, s) for s, v in new_failed.items() if v],
        )
        tool_days: dict[tuple, list[int]] = defaultdict(lambda: [0] * 5)
        model_days: dict[tuple, list[int]] = defaultdict(lambda: [0] * 4)
        for (sid, tool), v in use.items():
            day = self._day(known, sid)
            if day is not None:
                t = tool_days[(day[0], tool)]
                t[1:] = [a + b for a, b in zip(t[1:], v, strict=True)]
        for sid, v in per_session.items():
            day = self._day(known, sid)
            if day is not None:
                m = model_days[day]
                m[1] += new_failed.get(sid, 0)
                m[2] += v[0]
                m[3] += v[1]
        self.daily(tool_days, model_days)
        self.conn.executemany(
            "UPDATE main.changes SET failed = ? WHERE session_id = ? AND call_id = ?", landed
        )
        self.conn.executemany("DELETE FROM main.pending WHERE session_id = ? AND call_id = ?", done)

    def _failed_already(self, turns: list[tuple[str, int]]) -> set[tuple[str, int]]:
        """Of these (session, turn) pairs, those already counted as failed turns."""
        by_session: dict[str, set[int]] = defaultdict(set)
        for sid, mid in turns:
            by_session[sid].add(mid)
        out: set[tuple[str, int]] = set()
        for sid, mids in by_session.items():
            for part in chunks(sorted(mids)):
                out |= set(
                    self.conn.execute(
                        "SELECT session_id, message_id FROM main.failed_turns WHERE session_id = ? "
                        f"AND message_id IN ({sql.in_list(len(part))})",
                        [sid, *part],
                    ).fetchall()
                )
        return out

    def _pending(self, keys: set[tuple[str, str]]) -> dict[tuple[str, str], tuple[int, str]]:
        out: dict[tuple[str, str], tuple[int, str]] = {}
        by_session: dict[str, list[str]] = defaultdict(list)
        for sid, cid in keys:
            by_session[sid].append(cid)
        for sid, cids in by_session.items():
            for part in chunks(cids):
                for r in self.conn.execute(
                    "SELECT call_id, message_id, tool FROM main.pending WHERE session_id = ? "
                    f"AND call_id IN ({sql.in_list(len(part))})",
                    [sid, *part],
                ):
                    out[(sid, r[0])] = (r[1], r[2])
        return out

    # -- taking sessions out ------------------------------------------------------------------

    def drop(self, ids: list[str], keep_session: bool) -> int:
        """Take these sessions' figures out of every table; ``keep_session``: their rows stay
        in ``sess``, zeroed, to be counted again. Returns the messages they had."""
        pick(self.conn, ids)
        picked = "SELECT session_id FROM temp.pick"
        months: dict[tuple, list[int]] = {}
        counts: dict[tuple, int] = defaultdict(int)
        gone = 0
        for r in self.conn.execute(
            f"SELECT source, month, {', '.join(SIZES)} FROM main.sess WHERE session_id IN ({picked})"
        ):
            acc = months.setdefault((r[0], r[1]), [0] * len(SIZES))
            acc[:] = [a - b for a, b in zip(acc, r[2:], strict=True)]
            counts[(r[0], r[1])] += 1
            gone += r[2]
        for key, v in months.items():
            self._months({key: v}, -counts[key] if not keep_session else 0)
        self.conn.execute(
            "INSERT INTO main.tool_day SELECT s.day, t.tool, -SUM(t.calls), -SUM(t.results), "
            "-SUM(t.failures), -SUM(t.timeouts), -SUM(t.exits) FROM main.sess s JOIN main.tool_use t "
            f"ON t.session_id = s.session_id WHERE s.session_id IN ({picked}) AND s.day IS NOT NULL "
            "GROUP BY 1, 2 ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, results = "
            "results + excluded.results, failures = failures + excluded.failures, timeouts = "
            "timeouts + excluded.timeouts, exits = exits + excluded.exits"
        )
        self.conn.execute(
            f"INSERT INTO main.model_day SELECT day, COALESCE(model, '{NO_MODEL}'), -SUM(turns), "
            "-SUM(failed_turns), -SUM(results), -SUM(failures) FROM main.sess "
            f"WHERE session_id IN ({picked}) AND day IS NOT NULL GROUP BY 1, 2 "
            "ON CONFLICT DO UPDATE SET turns = turns + excluded.turns, failed_turns = "
            "failed_turns + excluded.failed_turns, results = results + excluded.results, "
            "failures = failures + excluded.failures"
        )
        self.conn.execute("DELETE FROM main.tool_day WHERE calls = 0 AND results = 0")
        self.conn.execute("DELETE FROM main.model_day WHERE turns = 0 AND results = 0")
        for table in ("tool_use", "failed_turns", "pending", "runs", "loops", "changes"):
            self.conn.execute(f"DELETE FROM main.{table} WHERE session_id IN ({picked})")
        if keep_session:
            self.conn.execute(
                "UPDATE main.sess SET "
                + ", ".join(
                    f"{k} = 0"
                    for k in (
                        *SIZES,
                        "all_b",
                        "calls",
                        "results",
                        "failures",
                        "timeouts",
                        "exits",
                        "turns",
                        "failed_turns",
                    )
                )
                + f" WHERE session_id IN ({picked})"  # fmt: skip
            )
        else:
            self.conn.execute(f"DELETE FROM main.sess WHERE session_id IN ({picked})")
        self.conn.execute("DELETE FROM main.bytes_month WHERE sessions <= 0 AND n <= 0")
        return int(gone)

    def add_sessions(self, rows: list[dict[str, Any]]) -> int:
        """Sessions into ``sess`` (those there already left alone), counted in bytes_month.
        Returns how many were new."""
        new = []
        for part in chunks([r["id"] for r in rows]):
            have = {
                x[0]
                for x in self.conn.execute(
                    f"SELECT session_id FROM main.sess WHERE session_id IN ({sql.in_list(len(part))})",
                    part,
                )
            }
            wanted = set(part)
            new += [r for r in rows if r["id"] in wanted and r["id"] not in have]
        self.conn.executemany(
            "INSERT OR IGNORE INTO main.sess (session_id, started_at, source, model, month, day, "
            "workspace, cwd) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    r["id"],
                    r["started_at"],
                    r["source"],
                    r["model"],
                    month_of(r["started_at"]),
                    day_of(r["started_at"]),
                    r["workspace"],
                    r["cwd"],
                )  # fmt: skip
                for r in new
            ],
        )
        counts: dict[tuple, int] = defaultdict(int)
        for r in new:
            counts[(r["source"], month_of(r["started_at"]))] += 1
        for key, n in counts.items():
            self._months({key: [0] * len(SIZES)}, n)
        return len(new)
