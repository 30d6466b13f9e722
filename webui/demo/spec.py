"""Session specs and turn skeletons: the shape of each generated session before any text."""

from __future__ import annotations

import datetime as _dt
import math
import random

DEFAULT_NOW = 1793491200.0  # 2026-11-01 00:00:00 UTC
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _utc(ts: float) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(seconds=ts)


def _wchoice(rng: random.Random, pairs):
    total = 0
    for _, w in pairs:
        total += w
    x = rng.random() * total
    for item, w in pairs:
        x -= w
        if x < 0:
            return item
    return pairs[-1][0]


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _tok(s: str | None) -> int:
    return (len(s) // 4 + 1) if s else 0


# --------------------------------------------------------------------------------------------
# Session specs and skeletons
# --------------------------------------------------------------------------------------------

class _Spec:
    __slots__ = ("idx", "id", "source", "user_id", "model", "model_config", "system_prompt", "parent", "start",
                 "end", "end_reason", "title", "seed", "n_own", "copy_from", "copy_n", "first", "scale",
                 "billing", "topic", "must", "goal", "end_gap", "lead_gap", "duration", "reasoning_on",
                 "cost_mode", "cron_prompt", "kind", "force_tools", "gap_profile", "text_scale")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))

    @property
    def n_total(self) -> int:
        return self.n_own + (self.copy_n or 0)


# step codes
_S, _U, _A, _T = 0, 1, 2, 3


def _skeleton(seed: int, n: int, first: str | None, profile: str, lead_gap: bool, force_tools: bool):
    """Exact-length turn structure: list of (code, k, gap_before) with n entries.

    code _S system, _U user, _A assistant with k tool calls (0 = final answer), _T k-th tool result.
    """
    rng = random.Random(seed * 2 + 1)
    steps: list[tuple[int, int, float]] = []
    rem = n
    if rem <= 0:
        return steps
    lp = rng.lognormvariate
    if profile == "gateway":
        mu_user, p_pause, pause = math.log(80), 0.12, (1200.0, 28000.0)
    elif profile == "auto":
        mu_user, p_pause, pause = math.log(8), 0.0, (0.0, 0.0)
    elif profile == "email":
        mu_user, p_pause, pause = math.log(900), 0.3, (1800.0, 20000.0)
    else:
        mu_user, p_pause, pause = math.log(45), 0.05, (600.0, 5400.0)

    def user_gap():
        if p_pause and rng.random() < p_pause:
            return rng.uniform(*pause)
        return min(3 + lp(mu_user, 0.9), 3600.0)

    first_gap = user_gap() if lead_gap else 0.0
    if first is not None:
        steps.append((_S, 0, first_gap))
        first_gap = rng.uniform(0.001, 0.05)
        rem -= 1
    turn = 0
    while rem > 0:
        gap = first_gap if turn == 0 else user_gap()
        steps.append((_U, 0, gap))
        rem -= 1
        turn += 1
        if rem == 0:
            break
        x = rng.random()
        rounds = 0 if x < 0.38 else 1 if x < 0.62 else 2 if x < 0.78 else 3 if x < 0.88 else rng.randint(4, 8)
        if force_tools and turn == 1:
            rounds = max(rounds, 3)
        after_user = True
        for _ in range(rounds):
            if rem - 1 < 2:
                break
            y = rng.random()
            k = 1 if y < 0.6 else 2 if y < 0.9 else 3
            k = min(k, rem - 2)
            steps.append((_A, k, (2 + lp(1.8, 0.6)) if after_user else (1.5 + lp(1.6, 0.6))))
            after_user = False
            for i in range(k):
                steps.append((_T, i, rng.uniform(20, 120) if rng.random() < 0.04 else 0.3 + rng.expovariate(0.5)))
            rem -= 1 + k
        steps.append((_A, 0, min((2 + lp(2.0, 0.7)) if after_user else (1.5 + lp(1.7, 0.6)), 180.0)))
        rem -= 1
    return steps


def _span(steps, scale: float) -> float:
    """Seconds from the first message (or session start) to the last message."""
    total = 0.0
    for i, st in enumerate(steps):
        g = st[2] * scale
        total += g if (i == 0 and st[2] == 0.0) else max(g, 0.001)
    return total


def _sample_count(rng: random.Random, mean: float, cap: int, lo: int = 2) -> int:
    sigma = 0.85
    mu = math.log(max(mean, 1.0)) - sigma * sigma / 2
    return max(lo, min(cap, int(round(rng.lognormvariate(mu, sigma)))))


# --------------------------------------------------------------------------------------------
# Planner: decides every session row except the counters
# --------------------------------------------------------------------------------------------

_HOUR_WEIGHTS = tuple((h, (1 if h < 6 else 4 if h < 8 else 7 if h < 18 else 6 if h < 23 else 3)) for h in range(24))
