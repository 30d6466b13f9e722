"""Streams one session's message rows in time order, and interleaves all sessions in global
timestamp order (like a live Hermes) into insert batches."""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Iterator

from webui.demo.corpus import _MODELS
from webui.demo.spec import _A, _T, _U, _hex, _skeleton, _Spec, _tok
from webui.demo.text import _Text

_BATCH = 2000  # message rows per insert batch


# --------------------------------------------------------------------------------------------
# Streaming one session's rows
# --------------------------------------------------------------------------------------------

class _Stream:
    """Yields (timestamp, message_row) for one session, keeping the session counters."""

    __slots__ = ("sp", "msgs", "tools", "inp", "out", "cr", "cw", "rsn", "calls")

    def __init__(self, sp: _Spec):
        self.sp = sp
        self.msgs = self.tools = self.inp = self.out = self.cr = self.cw = self.rsn = self.calls = 0

    def rows(self) -> Iterator[tuple]:
        sp = self.sp
        sid = sp.id
        ts = sp.start
        if sp.copy_from is not None:
            # /branch copies the parent's whole history within a few milliseconds (same tool call ids)
            copied_ctx = 0
            for k, (_, row) in enumerate(_Stream(sp.copy_from).rows()):
                copied_ctx += _tok(row[2]) + _tok(row[4])
                ts = round(sp.start + k * 0.0015, 6)
                self.msgs += 1
                if row[4]:
                    self.tools += len(json.loads(row[4]))
                yield ts, (sid,) + row[1:6] + (ts,) + row[7:]
        if sp.n_own <= 0:
            return
        text = _Text(sp)
        r = text.r
        steps = _skeleton(sp.seed, sp.n_own, sp.first, sp.gap_profile, sp.lead_gap, sp.force_tools)
        scale = sp.scale
        prices = _MODELS.get(sp.model, _MODELS[None])[1]
        caching = sp.billing is not None and prices[2] > 0
        writes_cache = sp.billing is not None and sp.billing[0] == "anthropic"
        base_prompt = 1900 + _tok(sp.system_prompt)
        ctx = copied_ctx if sp.copy_from is not None else 0
        prev_prompt = 0
        pending: list[tuple[str, str, dict]] = []
        first_user = True
        for i, (code, k, gap) in enumerate(steps):
            if i == 0 and gap == 0.0 and sp.copy_from is None:
                ts = sp.start
            else:
                ts += max(gap * scale, 0.001)
            t = round(ts, 6)
            if code == _U:
                content = text.user(first_user)
                first_user = False
                ctx += _tok(content)
                row = (sid, "user", content, None, None, None, t, None, None, None, None, None, None, None)
            elif code == _A:
                rz = text.reasoning()
                if k:
                    content = text.toolcall_text()
                    calls = []
                    for _ in range(k):
                        name = text.pick_tool()
                        args = text.tool_args(name)
                        cid = "call_" + _hex(r, 24)
                        calls.append({"id": cid, "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(args)}})
                        pending.append((cid, name, args))
                    tool_calls = json.dumps(calls)
                    finish = "tool_calls"
                else:
                    content = text.assistant_final()
                    tool_calls = None
                    finish = "length" if r.random() < 0.01 else "stop"
                tc = _tok(content) + _tok(tool_calls) + (_tok(rz[0]) if rz else 0)
                prompt = base_prompt + ctx
                self.calls += 1
                self.out += tc
                if rz:
                    self.rsn += _tok(rz[0])
                elif self.sp.reasoning_on and text.family == "openai":
                    self.rsn += r.randint(0, 400)
                if caching and prev_prompt and r.random() < 0.9:
                    cached = min(prev_prompt, prompt)
                else:
                    cached = 0
                self.cr += cached
                self.inp += prompt - cached
                if writes_cache and prompt - cached >= 1024:
                    self.cw += prompt - cached - (r.randint(0, 400) if cached else 0)
                prev_prompt = prompt
                ctx += tc
                self.tools += k
                row = (sid, "assistant", content, None, tool_calls, None, t, tc, finish,
                       rz[0] if rz else None, rz[1] if rz else None, rz[2] if rz else None,
                       rz[3] if rz else None, None)
            elif code == _T:
                cid, name, args = pending.pop(0)
                content = text.tool_result(name, args)
                ctx += min(_tok(content), 6000)
                row = (sid, "tool", content, cid, None, name, t, None, None, None, None, None, None, None)
            else:
                content = text.system(sp.first)
                ctx += _tok(content)
                row = (sid, "system", content, None, None, None, t, None, None, None, None, None, None, None)
            self.msgs += 1
            yield t, row

    def session_row(self) -> tuple:
        sp = self.sp
        has_calls = self.calls > 0
        billing = sp.billing if has_calls else None
        est = act = None
        status = source = pricing = None
        provider = base_url = mode = None
        if has_calls:
            if billing is None:  # NULL model: Hermes still records an unknown, zero estimate
                est, status, source = 0.0, "unknown", "none"
            else:
                provider, base_url, mode, source, pricing = billing
                status = sp.cost_mode
                p_in, p_out, p_cr, p_cw = _MODELS[sp.model][1]
                cost = round((self.inp * p_in + self.out * p_out + self.cr * p_cr + self.cw * p_cw) / 1e6, 6)
                rr = random.Random(sp.seed * 2 + 7)
                if status == "included":
                    est = 0.0
                elif status == "unknown":
                    est = None
                elif status == "actual":
                    est = cost
                    act = round(cost * rr.uniform(0.55, 1.1), 6)
                else:
                    est = cost
                    if provider == "openrouter" and rr.random() < 0.4:
                        act = round(cost * rr.uniform(0.4, 1.05), 6)
        model_config = sp.model_config if (self.msgs or sp.n_own) else None
        return (sp.id, sp.source, sp.user_id, sp.model, model_config, sp.system_prompt,
                sp.parent.id if sp.parent is not None else None, round(sp.start, 6),
                round(sp.end, 6) if sp.end is not None else None, sp.end_reason, self.msgs, self.tools,
                self.inp, self.out, self.cr, self.cw, self.rsn, provider, base_url, mode, est, act, status,
                source, pricing, sp.title, self.calls)



def _batches(specs: list[_Spec]) -> Iterator[tuple[list, list]]:
    """Sweep over all sessions in time order; yield (session_rows, message_rows) batches with the
    messages of concurrent sessions interleaved in global timestamp order, like a live Hermes."""
    heap: list = []
    msgs: list = []
    sess: list = []
    i = 0
    n = len(specs)
    inf = float("inf")
    while i < n or heap:
        next_start = specs[i].start if i < n else inf
        if heap and heap[0][0] <= next_start:
            _, seq, st, it, row = heap[0]
            msgs.append(row)
            nxt = next(it, None)
            if nxt is None:
                heapq.heappop(heap)
                sess.append(st.session_row())
            else:
                heapq.heapreplace(heap, (nxt[0], seq, st, it, nxt[1]))
            if len(msgs) >= _BATCH:
                yield sess, msgs
                sess, msgs = [], []
        else:
            st = _Stream(specs[i])
            it = st.rows()
            first = next(it, None)
            if first is None:
                sess.append(st.session_row())
            else:
                heapq.heappush(heap, (first[0], i, st, it, first[1]))
            i += 1
    if sess or msgs:
        yield sess, msgs
