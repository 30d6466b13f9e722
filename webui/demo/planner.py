"""Plans a whole database: which sessions exist, when, from which source, with which model,
lineages (compression chains, /branch, subagents), costs and the long session."""

from __future__ import annotations

import json
import math
import random

from webui.demo.corpus import (
    _BRANCH_NAMES,
    _CITIES,
    _CJK_TITLES,
    _CRON_PROMPTS,
    _DIRECT,
    _EMOJI_TITLES,
    _END_REASONS,
    _ERRORS,
    _FILES,
    _GATEWAY_END,
    _GATEWAYS,
    _HOSTS,
    _LIBS,
    _LOCAL,
    _MARKDOWN_OK,
    _MEMORY_LINES,
    _MODEL_NAMES,
    _MODEL_WEIGHTS,
    _MUST_ALL,
    _NOUS,
    _OPENROUTER,
    _PROJECTS,
    _SKILLS,
    _SOURCE_NAMES,
    _SOURCE_WEIGHTS,
    _SYSTEM_HEAD,
    _TITLE_DECOR,
    _TOPICS,
)
from webui.demo.spec import (
    _HOUR_WEIGHTS,
    _hex,
    _sample_count,
    _skeleton,
    _span,
    _Spec,
    _utc,
    _wchoice,
)


class _Planner:
    def __init__(self, rng: random.Random, sessions: int, now: float, mean: float, long_n: int,
                 text_scale: float = 1.0):
        self.rng = rng
        self.text_scale = text_scale
        self.n = sessions
        self.now = now
        self.mean = mean
        self.cap = max(40, int(mean * 8))
        self.long_n = long_n
        self.used_ids: set[str] = set()
        self.used_titles: set[str] = set()      # lower-cased: SQLite LIKE in Hermes' lineage lookup ignores case
        self.lineage: dict[str, int] = {}        # lower-cased base title -> highest " #N" handed out
        self.n_specs = 0
        r = rng
        self.users = {
            "telegram": [str(r.randint(100_000_000, 7_999_999_999)) for _ in range(7)],
            "discord": [str(r.randint(10**17, 10**18 - 1)) for _ in range(8)],
            "signal": ["+" + str(r.randint(10**10, 10**12 - 1)) for _ in range(5)],
            "whatsapp": [str(r.randint(10**10, 10**12 - 1)) + "@s.whatsapp.net" for _ in range(5)],
            "matrix": ["@kim:matrix.org", "@li.wei:matrix.org", "@yuki:matrix.org", "@sam:matrix.org"],
            "slack": ["U0" + "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(9))
                      for _ in range(5)],
            "email": ["ops@example.com", "alex@example.com", "billing@example.org"],
        }
        # cron jobs: (job id, prompt index, hour of day)
        self.cron_jobs = [(_hex(r, 12), i % len(_CRON_PROMPTS), r.randint(0, 23)) for i in range(6)]
        self.batch_runs = [[_hex(r, 6), 0] for _ in range(4)]

    # ---- small helpers -------------------------------------------------------------------
    def _fill(self, tmpl: str, topic) -> str:
        r = self.rng
        words = topic[2]
        return tmpl.format(project=r.choice(_PROJECTS), host=r.choice(_HOSTS), city=r.choice(_CITIES),
                           lib=r.choice(_LIBS), word=r.choice(words), w=r.choice(words),
                           w2=r.choice(words), file=r.choice(_FILES), error=r.choice(_ERRORS))

    def _claim(self, t: str) -> bool:
        k = t.lower()
        if k in self.used_titles:
            return False
        self.used_titles.add(k)
        return True

    def _unique(self, cand: str, when: float) -> str:
        """cand, else cand + " (YYYYmmdd)", else cand + " (YYYYmmdd-k)"."""
        cand = cand[:80].rstrip()
        if self._claim(cand):
            return cand
        day = _utc(when).strftime("%Y%m%d")
        alt = f"{cand} ({day})"
        k = 2
        while not self._claim(alt):
            alt = f"{cand} ({day}-{k})"
            k += 1
        return alt

    def _title(self, topic, when: float) -> str:
        r = self.rng
        x = r.random()
        if x < 0.03:
            base = r.choice(_CJK_TITLES)
        elif x < 0.06:
            base = r.choice(_EMOJI_TITLES)
        else:
            base = r.choice(topic[0])
        for attempt in range(5):
            decor = r.choice(_TITLE_DECOR) if (attempt or r.random() < 0.6) else ""
            cand = (self._fill(decor, topic) + base) if decor.endswith(": ") else (base + self._fill(decor, topic))
            if len(cand) <= 100 and self._claim(cand):
                return cand
        return self._unique(base, when)

    def _lineage_next(self, title: str | None) -> str | None:
        """Hermes' get_next_title_in_lineage() over the titles handed out so far (None where Hermes'
        set_session_title would refuse the result as too long: the callers swallow that error)."""
        base = title if title is not None else "branch"
        head, sep, num = base.rpartition(" #")
        if sep and num.isdigit():
            base = head
        low = base.lower()
        best = self.lineage.get(low, 0)
        if low in self.used_titles:
            best = max(best, 1)
        if best == 0:
            if self._claim(base):
                return base
            best = 1
        nxt = best + 1
        if len(f"{base} #{nxt}") > 100:
            return None
        while not self._claim(f"{base} #{nxt}"):
            nxt += 1
        self.lineage[low] = nxt
        return f"{base} #{nxt}"

    def _model_and_billing(self):
        r = self.rng
        model = r.choices(_MODEL_NAMES, _MODEL_WEIGHTS)[0]
        if model is None:
            return None, None, "null"
        vendor = model.split("/")[0]
        x = r.random()
        if vendor in _DIRECT:
            share = {"anthropic": 0.6, "openai": 0.5, "google": 0.7}[vendor]
            if x < share:
                return model, _DIRECT[vendor], "estimated"
            return model, _OPENROUTER, ("actual" if r.random() < 0.4 else "estimated")
        if vendor == "nousresearch":
            if x < 0.65:
                return model, _NOUS, "included"
            if x < 0.8:
                return model, _LOCAL[1], "unknown"
            return model, _OPENROUTER, ("actual" if r.random() < 0.4 else "estimated")
        if model == "qwen/qwen3-coder" and x < 0.5:
            return model, _LOCAL[0], "unknown"
        return model, _OPENROUTER, ("actual" if r.random() < 0.4 else "estimated")

    def _model_config(self) -> str:
        r = self.rng
        rc = None if r.random() < 0.45 else {"enabled": True, "effort": r.choice(("low", "medium", "high"))}
        return json.dumps({"max_iterations": r.choice((60, 90, 90, 120)), "reasoning_config": rc})

    def _system_prompt(self, source: str) -> str:
        r = self.rng
        lines = r.sample(_MEMORY_LINES, r.randint(1, 4))
        mem = "\n".join("- " + ln.format(city=r.choice(_CITIES), project=r.choice(_PROJECTS), host=r.choice(_HOSTS))
                        for ln in lines)
        md = "supported" if source in _MARKDOWN_OK else "limited"
        skills = ", ".join(r.sample(_SKILLS, r.randint(3, 7)))
        return (f"{_SYSTEM_HEAD}\n\n## Memory\n{mem}\n\n## Platform\nYou are talking to the user via {source}. "
                f"Format replies for that surface (markdown is {md}).\n\n## Skills\n{skills}")

    def _user_id(self, source: str):
        pool = self.users.get(source)
        if pool is None or self.rng.random() < 0.04:
            return None
        return self.rng.choice(pool)

    def _end_reason(self, source: str) -> str:
        if source in _GATEWAYS:
            return _wchoice(self.rng, _GATEWAY_END)
        return _wchoice(self.rng, _END_REASONS[source])

    @staticmethod
    def _profile(source: str) -> str:
        if source == "email":
            return "email"
        if source in _GATEWAYS:
            return "gateway"
        if source in ("cron", "batch", "webhook", "api-server"):
            return "auto"
        return "local"

    def _new(self, source: str, *, n: int, first=None, kind="normal", topic=None, lead_gap=False,
             force_tools=False, model_from: _Spec | None = None) -> _Spec:
        r = self.rng
        if topic is None:
            topic = r.randrange(len(_TOPICS))
        if model_from is not None:
            model, billing, cost_mode = model_from.model, model_from.billing, model_from.cost_mode
        else:
            model, billing, cost_mode = self._model_and_billing()
        sp = _Spec(idx=self.n_specs, source=source, seed=r.getrandbits(62), n_own=n, copy_n=0, first=first,
                   kind=kind, topic=topic, model=model, billing=billing, cost_mode=cost_mode, scale=1.0,
                   lead_gap=lead_gap, force_tools=force_tools, must=frozenset(), gap_profile=self._profile(source),
                   user_id=self._user_id(source), start=0.0, reasoning_on=False, text_scale=self.text_scale)
        self.n_specs += 1
        sp.model_config = self._model_config()
        sp.system_prompt = self._system_prompt(source)
        sp.reasoning_on = '"enabled": true' in sp.model_config
        sp.end_gap = r.uniform(3, 600)
        return sp

    def _duration(self, sp: _Spec) -> float:
        """Seconds from started_at to the last message (0 for empty sessions)."""
        d = (sp.copy_n - 1) * 0.0015 if sp.copy_n else 0.0
        if sp.n_own:
            steps = _skeleton(sp.seed, sp.n_own, sp.first, sp.gap_profile, sp.lead_gap, sp.force_tools)
            d += _span(steps, sp.scale)
        sp.duration = d
        return d

    def _fit(self, sp: _Spec, limit: float) -> float:
        """Scale a session's gaps so that its span is at most ``limit`` seconds."""
        d = self._duration(sp)
        fixed = (sp.copy_n - 1) * 0.0015 if sp.copy_n else 0.0
        if d > limit > fixed and sp.n_own:
            own = d - fixed
            sp.scale = max(1e-5, sp.scale * (limit - fixed) / own * 0.97)
            d = self._duration(sp)
        return d

    def _count(self, factor: float = 1.0) -> int:
        return _sample_count(self.rng, self.mean * factor, self.cap)

    # ---- groups: sessions whose times depend on each other, laid out relative to 0 ------------
    def _single(self, source=None, n=None, must=frozenset(), title=True, active=False) -> list[_Spec]:
        r = self.rng
        if source is None:
            source = r.choices(_SOURCE_NAMES, _SOURCE_WEIGHTS)[0]
            if source == "cron" and not active and n is None and not must:
                return self._cron()
            if source == "cron":
                source = "cli"
        if n is None:
            n = self._count()
        first = "note" if n >= 3 and r.random() < 0.03 else None
        sp = self._new(source, n=n, first=first, force_tools=bool(must))
        sp.must = must
        self._duration(sp)
        sp.title = title  # resolved once the start time is known
        sp.end_reason = None if active else self._end_reason(source)
        return [sp]

    def _cron(self) -> list[_Spec]:
        r = self.rng
        job = r.choice(self.cron_jobs)
        sp = self._new("cron", n=max(2, min(self.cap, int(r.uniform(0.2, 0.8) * self.mean) + 2)), first="cron")
        sp.user_id = None
        sp.cron_prompt = job[1]
        sp.goal = job
        self._duration(sp)
        sp.title = "cron"
        sp.end_reason = "cron_complete"
        return [sp]

    def _chain(self, length: int) -> list[_Spec]:
        """Compression lineage: each parent ends with 'compression', the child starts right after."""
        r = self.rng
        source = r.choices(_SOURCE_NAMES[:12], _SOURCE_WEIGHTS[:12])[0]
        if source == "cron":
            source = "cli"
        topic = r.randrange(len(_TOPICS))
        members: list[_Spec] = []
        t = 0.0
        for i in range(length):
            last = i == length - 1
            n = self._count() if last else max(self._count(1.4), 6)
            first = None if i == 0 else ("compaction" if r.random() < 0.7 else None)
            sp = self._new(source, n=n, first=first, topic=topic, kind="normal" if i == 0 else "compress_child",
                           model_from=members[0] if members and r.random() < 0.93 else None)
            if members:
                sp.parent = members[-1]
                sp.user_id = members[0].user_id
                sp.system_prompt = members[-1].system_prompt
            sp.start = t
            d = self._duration(sp)
            sp.end_gap = r.uniform(3, 600) if last else r.uniform(0.5, 3.0)
            sp.end_reason = self._end_reason(source) if last else "compression"
            sp.title = "chain" if i == 0 else "lineage"
            t = sp.start + d + sp.end_gap + r.uniform(0.01, 0.05)
            members.append(sp)
        return members

    def _branch(self, parents: list[_Spec] | None = None, max_children: int = 2,
                source: str | None = None) -> list[_Spec]:
        """/branch: the parent ends ('branched', or 'session_switch' on gateways) and 1-2 children copy its
        history; the child title follows get_next_title_in_lineage(parent title or "branch") unless named."""
        r = self.rng
        if parents is None:
            parents = self._single(source=source or r.choice(("cli", "cli", "tui", "acp", "telegram", "discord")),
                                   n=max(self._count(), 4))
        parent = parents[-1]
        parent.end_reason = "session_switch" if parent.source in _GATEWAYS else "branched"
        parent.end_gap = r.uniform(5, 120)
        members = list(parents)
        end = parent.start + parent.duration + parent.end_gap
        k = 1 if (max_children < 2 or r.random() < 0.75) else 2
        for j in range(k):
            child = self._new(parent.source, n=self._count(0.8), topic=parent.topic, kind="branch_child",
                              lead_gap=True, model_from=parent)
            child.parent = parent
            child.user_id = parent.user_id
            child.copy_from = parent
            child.copy_n = parent.n_total
            child.start = end + r.uniform(0.01, 0.05) + (0 if j == 0 else r.uniform(60, 1800))
            self._duration(child)
            child.end_reason = self._end_reason(child.source)
            child.title = "branch_name" if r.random() < 0.25 else "lineage"
            members.append(child)
        return members

    def _subagents(self, k: int, parent_n=None) -> list[_Spec]:
        """delegate_task children: same source, started while the parent runs, untitled, no user id."""
        r = self.rng
        source = r.choice(("cli", "cli", "acp", "tui", "telegram", "discord", "api-server", "signal", "whatsapp"))
        parent = self._single(source=source, n=parent_n or max(self._count(1.3), 8))[0]
        members = [parent]
        pd = parent.duration
        for f in sorted(r.uniform(0.05, 0.85) for _ in range(k)):
            child = self._new(source, n=r.randint(3, 15), kind="subagent", model_from=parent)
            child.parent = parent
            child.user_id = None
            child.title = None
            child.start = parent.start + f * pd + r.uniform(0.5, 3)
            self._fit(child, max(5.0, (parent.start + pd) - child.start - 1.0))
            child.end_gap = r.uniform(0.3, 2.0)
            child.end_reason = None  # Hermes never records a reason for subagent sessions
            members.append(child)
        return members

    # ---- main -----------------------------------------------------------------------------
    def plan(self) -> tuple[list[_Spec], _Spec | None]:
        r = self.rng
        n = self.n
        groups: list[list[_Spec]] = []
        active: list[_Spec] = []
        remaining = n

        def take(g):
            nonlocal remaining
            groups.append(g)
            remaining -= len(g)

        # showcase sessions: every special content kind is forced into them, so that even tiny
        # databases contain the XSS corpus, multimodal content, CJK, emoji, REPL prompts, ...
        show = (("cli", "anthropic/claude-sonnet-4.6", "xss"), ("telegram", "openai/gpt-5", "cjk"),
                ("discord", "deepseek/deepseek-chat", "emoji"))
        n_show = 0 if n < 4 else 1 if n < 8 else 2 if n < 12 else 3
        for source, model, title in show[:n_show]:
            sp = self._single(source=source, n=max(40, min(self.cap, int(self.mean * 3))), must=_MUST_ALL)[0]
            vendor = model.split("/")[0]
            sp.model = model
            sp.billing, sp.cost_mode = (_DIRECT[vendor], "estimated") if vendor in _DIRECT else (_OPENROUTER, "actual")
            cfg = {"max_iterations": 90, "reasoning_config": {"enabled": True, "effort": "medium"}}
            if title == "xss":
                cfg["personality"] = '<script>alert(1)</script>"><svg onload=alert(1)>'
                sp.system_prompt = sp.system_prompt.replace(
                    "\n\n## Platform",
                    "\n- Note from user: <img src=x onerror=alert(1)> <script>alert(1)</script>\n\n## Platform")
            sp.model_config = json.dumps(cfg)
            sp.reasoning_on = True
            sp.title = title
            take([sp])
        if n >= 200:
            take(self._chain(9))
            take(self._subagents(14, parent_n=max(60, min(self.cap, int(self.mean * 4)))))
        if remaining >= 3:
            take(self._chain(3))
        if remaining >= 2:
            take(self._branch(max_children=min(2, remaining - 1), source="cli"))
        if remaining >= 2:
            take(self._subagents(1))
        n_active = 0 if n < 4 else min(12, max(2, n // 50))
        for _ in range(min(n_active, remaining)):
            g = self._single(active=True)
            active.append(g[0])
            take(g)
        n_empty = 0 if n < 10 else max(2, n // 60)
        for _ in range(min(n_empty, remaining)):
            take(self._single(n=0, title=r.random() < 0.5))
        while remaining > 0:
            x = r.random()
            if x < 0.075 and remaining >= 2:
                length = min(remaining, _wchoice(r, ((2, 40), (3, 30), (4, 15), (5, 9), (6, 6))))
                g = self._chain(length)
                if remaining - length >= 1 and r.random() < 0.1:
                    g = self._branch(parents=g, max_children=min(2, remaining - length))
                take(g)
            elif x < 0.105 and remaining >= 2:
                take(self._branch(max_children=min(2, remaining - 1)))
            elif x < 0.155 and remaining >= 2:
                take(self._subagents(min(remaining - 1, _wchoice(r, ((1, 60), (2, 25), (3, 15))))))
            else:
                take(self._single())
        assert remaining == 0
        self._place(groups, {id(s) for s in active})
        specs = [s for g in groups for s in g]
        long_spec = self._long() if self.long_n > 0 else None
        if long_spec is not None:
            specs.append(long_spec)
        specs.sort(key=lambda s: (s.start, s.idx))
        for sp in specs:  # in time order, so lineage numbers grow with time
            self._finish(sp)
        return specs, long_spec

    def _start_time(self) -> float:
        r = self.rng
        age_days = 365.0 * (r.random() ** 1.35)
        day0 = math.floor((self.now - age_days * 86400) / 86400) * 86400
        return day0 + _wchoice(r, _HOUR_WEIGHTS) * 3600 + r.uniform(0, 3600)

    def _place(self, groups, active_ids) -> None:
        r = self.rng
        now = self.now
        for g in groups:
            head = g[0]
            if id(head) in active_ids:
                start = now - r.uniform(0.2, 44) * 3600
                self._fit(head, max(60.0, (now - 30.0) - start))
                head.start = start
                head.end = None
                head.end_reason = None
                continue
            if head.kind == "normal" and head.source == "cron":
                job_hex, _, hour = head.goal
                first_start = math.floor(self._start_time() / 86400) * 86400 + hour * 3600 + r.uniform(0, 4.99)
                start, tries = first_start, 0
                while True:
                    cid = f"cron_{job_hex}_{_utc(start).strftime('%Y%m%d_%H%M%S')}"
                    if start + head.duration + head.end_gap < now - 60 and cid not in self.used_ids:
                        break
                    start -= 86400
                    tries += 1
                    if tries > 366:  # this job already ran every day: it is another job
                        job_hex, start, tries = _hex(r, 12), first_start, 0
                self.used_ids.add(cid)
                head.id = cid
                head.start = start
            else:
                base = self._start_time()
                last = max(s.start + s.duration + (s.end_gap or 0.0) for s in g)
                if base + last > now - 120:
                    base = now - 120 - last
                for s in g:
                    s.start = base + s.start
            for s in g:
                s.end = s.start + s.duration + s.end_gap

    def _long(self) -> _Spec:
        r = self.rng
        sp = self._new("cli", n=self.long_n, topic=0, force_tools=True)
        sp.model = "anthropic/claude-sonnet-4.6"
        sp.billing, sp.cost_mode = _DIRECT["anthropic"], "estimated"
        sp.kind = "long"
        sp.user_id = None
        d = self._fit(sp, 200 * 86400.0)
        sp.start = self.now - 3 * 86400 - d
        sp.end_gap = r.uniform(30, 300)
        sp.end = sp.start + d + sp.end_gap
        sp.end_reason = "cli_close"
        sp.title = "long"
        return sp

    def _new_id(self, sp: _Spec) -> str:
        r = self.rng
        stamp = _utc(sp.start).strftime("%Y%m%d_%H%M%S")
        while True:
            if sp.source == "cron":
                cid = f"cron_{_hex(r, 12)}_{stamp}"
            elif sp.source in ("cli", "tui"):
                cid = f"{stamp}_{_hex(r, 6)}"
            elif sp.source == "acp":
                h = _hex(r, 32)
                cid = f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"
            elif sp.source == "batch":
                run = self.batch_runs[r.randrange(len(self.batch_runs))]
                cid = f"batch_{run[0]}_{run[1]:04d}"
                run[1] += 1
            else:
                cid = f"{stamp}_{_hex(r, 8)}"
            if cid not in self.used_ids:
                self.used_ids.add(cid)
                return cid

    def _finish(self, sp: _Spec) -> None:
        r = self.rng
        if sp.id is None:
            sp.id = self._new_id(sp)
        topic = _TOPICS[sp.topic]
        t = sp.title
        if t is True or t == "chain":
            sp.title = self._title(topic, sp.start) if r.random() < 0.8 else None
        elif t is False or t is None:
            sp.title = None
        elif t == "cron":
            cand = _CRON_PROMPTS[sp.cron_prompt][0] + self._fill(
                r.choice(("", " for {project}", " on {host}", " ({lib})")), topic)
            sp.title = self._unique(cand, sp.start) if r.random() < 0.85 else None
        elif t == "lineage":  # compression child: only when the parent had a title; /branch: always
            if sp.kind == "compress_child":
                sp.title = self._lineage_next(sp.parent.title) if sp.parent.title else None
            else:
                sp.title = self._lineage_next(sp.parent.title)
        elif t == "branch_name":
            sp.title = self._unique(r.choice(_BRANCH_NAMES), sp.start)
        else:
            sp.title = self._unique({"xss": "<script>alert(1)</script> title test",
                                     "cjk": "项目复盘：大别山项目",
                                     "emoji": "🚀 Launch checklist ✅",
                                     "long": "Marathon refactor of the hermes-dashboard viewer"}[t], sp.start)
        if sp.n_total == 0:  # Hermes fills these on the first API call
            sp.model_config = None
            sp.system_prompt = None
