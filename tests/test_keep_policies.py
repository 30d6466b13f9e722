"""webui.keep's caches on their own, driven by a clock the test holds and refreshes it runs
itself: no sleep, no timing decides an outcome. Time-to-live and versions, lag, stale while
one background refresh works out the next, invalidation and soft purges, eviction of one
value at a time at ``maxsize``, persistence across restarts, and the throttle of rescans."""

from __future__ import annotations

import pytest

from webui import keep


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Refreshes:
    """StoreCache's ``start``: background refreshes queued, run when the test says."""

    def __init__(self) -> None:
        self.queued: list = []

    def __call__(self, work, name: str) -> None:
        self.queued.append((name, work))

    def run_all(self) -> int:
        n = len(self.queued)
        while self.queued:
            self.queued.pop(0)[1]()
        return n


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.calls


@pytest.fixture()
def parts():
    clock, refreshes = Clock(), Refreshes()
    return keep.StoreCache(clock=clock, start=refreshes), clock, refreshes, Counter()


def test_ttl_counts_on_the_injected_clock(parts):
    cache, clock, _refreshes, compute = parts
    policy = keep.Policy(ttl=10.0)
    assert cache.fetch("k", "v1", compute, policy) == 1
    clock.advance(9.999)
    assert cache.fetch("k", "v1", compute, policy) == 1  # fresh: within its ttl
    clock.advance(0.001)
    assert cache.fetch("k", "v1", compute, policy) == 2  # ttl reached: computed again
    assert compute.calls == 2


def test_a_version_that_moves_ends_a_value_unless_it_may_lag(parts):
    cache, clock, _refreshes, compute = parts
    until_moved = keep.Policy()  # ttl None: fresh until the version moves, whatever its age
    assert cache.fetch("a", "v1", compute, until_moved) == 1
    clock.advance(10_000)
    assert cache.fetch("a", "v1", compute, until_moved) == 1
    assert cache.fetch("a", "v2", compute, until_moved) == 2
    lagging = keep.Policy(max_lag=60.0)
    assert cache.fetch("b", "v1", compute, lagging) == 3
    clock.advance(59)
    assert cache.fetch("b", "v2", compute, lagging) == 3  # moved, within its lag
    clock.advance(1)
    assert cache.fetch("b", "v2", compute, lagging) == 4


def test_stale_while_revalidate_serves_at_once_and_refreshes_once(parts):
    cache, clock, refreshes, compute = parts
    policy = keep.Policy(ttl=10.0, stale_while_revalidate=60.0)
    assert cache.fetch("k", "v", compute, policy) == 1
    clock.advance(30)
    # A crowd past the ttl: every request gets the stale value at once, one refresh queued.
    assert [cache.fetch("k", "v", compute, policy) for _ in range(5)] == [1] * 5
    assert len(refreshes.queued) == 1 and compute.calls == 1
    assert refreshes.run_all() == 1
    assert cache.fetch("k", "v", compute, policy) == 2 and compute.calls == 2
    # Past stale_while_revalidate: the request computes it itself, nothing queued.
    clock.advance(61)
    assert cache.fetch("k", "v", compute, policy) == 3 and refreshes.queued == []
    # A moved version is not served stale, unless the policy says stale_if_changed.
    clock.advance(20)
    assert cache.fetch("k", "v-moved", compute, policy) == 4 and refreshes.queued == []
    lenient = keep.Policy(ttl=10.0, stale_while_revalidate=60.0, stale_if_changed=True)
    assert cache.fetch("m", "v", compute, lenient) == 5
    clock.advance(20)
    assert cache.fetch("m", "v-moved", compute, lenient) == 5 and len(refreshes.queued) == 1


def test_at_most_two_refreshers_at_once(parts):
    cache, clock, refreshes, compute = parts
    policy = keep.Policy(ttl=1.0, stale_while_revalidate=60.0)
    for key in "abc":
        cache.fetch(key, None, compute, policy)
    clock.advance(5)
    assert [cache.fetch(key, None, compute, policy) for key in "abc"] == [1, 2, 3]
    assert len(refreshes.queued) == keep.REFRESHERS == 2
    refreshes.run_all()
    assert cache.fetch("c", None, compute, policy) == 3  # still stale: asks again
    assert len(refreshes.queued) == 1


def test_the_statistics_policy_follows_the_config():
    clock, refreshes, compute = Clock(), Refreshes(), Counter()
    cache = keep.StoreCache(clock=clock, start=refreshes)
    config = {"LOGBOOK_STATS_REUSE_S": 3.0, "LOGBOOK_STATS_STALE_S": 60.0}
    policy = keep.reused(config, cacheable=lambda v: v != 2)
    assert cache.fetch("s", 1, compute, policy) == 1
    clock.advance(2)
    assert cache.fetch("s", 2, compute, policy) == 1  # a commit, within the reuse
    clock.advance(2)
    assert cache.fetch("s", 3, compute, policy) == 1 and len(refreshes.queued) == 1
    refreshes.run_all()  # worked out 2: not cacheable (a partial report), so not kept
    assert cache.peek("s") == 1
    clock.advance(60)
    assert cache.fetch("s", 4, compute, policy) == 3  # past the stale limit: computed
    never = keep.reused({"LOGBOOK_STATS_REUSE_S": 0.0, "LOGBOOK_STATS_STALE_S": 60.0})
    assert never.max_lag == 0 and never.stale_while_revalidate == 0


def test_invalidation_drops_everything_and_what_spans_it(parts):
    cache, _clock, _refreshes, compute = parts
    policy = keep.Policy()
    attached = cache.versioned(4)
    purged_softly = cache.versioned(4, purge_on_soft=True)
    attached.set("x", 1, "m")
    purged_softly.set("x", 1, "m")
    cache.fetch("a", "v", compute, policy)
    generation = cache.generation

    def spans_a_change():
        cache.invalidate()
        return "old"

    assert cache.fetch("d", None, spans_a_change, policy) == "old"
    assert cache.peek("d") is None  # it may describe the file before the change: not cached
    assert cache.generation == generation + 1 and cache.snapshot() == {}
    assert len(attached) == 0 and len(purged_softly) == 0
    assert cache.fetch("a", "v", compute, policy) == 2  # worked out again


def test_a_soft_purge_serves_values_for_a_grace_while_refreshed(parts):
    cache, clock, refreshes, compute = parts
    policy = keep.Policy()
    attached = cache.versioned(4)
    purged_softly = cache.versioned(4, purge_on_soft=True)
    attached.set("x", 1, "m")
    purged_softly.set("x", 1, "m")
    assert cache.fetch("a", "v1", compute, policy) == 1
    cache.invalidate(soft=True)  # one batch of a prune
    assert attached.get("x", "m") == 1 and len(purged_softly) == 0
    clock.advance(keep.SOFT_GRACE_S - 0.5)
    assert cache.fetch("a", "v2", compute, policy) == 1 and len(refreshes.queued) == 1
    refreshes.run_all()
    assert cache.fetch("a", "v2", compute, policy) == 2
    clock.advance(keep.SOFT_GRACE_S)  # the grace is over
    assert cache.fetch("a", "v3", compute, policy) == 3 and refreshes.queued == []


def test_a_full_cache_evicts_one_value_at_a_time():
    clock = Clock()
    cache = keep.StoreCache(clock=clock, start=Refreshes(), maxsize=3)
    policy = keep.Policy()
    for key in "abc":
        cache.fetch(key, None, lambda key=key: key.upper(), policy)
    cache.fetch("a", None, lambda: "never", policy)  # a hit: now the most recently used
    cache.fetch("d", None, lambda: "D", policy)
    assert cache.snapshot() == {"a": "A", "c": "C", "d": "D"}  # b alone went, no cliff
    for i in range(100):
        cache.fetch(f"n{i}", None, lambda i=i: i, policy)
        assert len(cache.snapshot()) == 3

    versioned = keep.VersionedCache(2, clock=clock)
    versioned.set("x", 1, "m")
    versioned.set("y", 2, "m")
    versioned.set("z", 3, "m")
    assert versioned.get("x", "m") is None and versioned.get("y", "m") == 2
    assert versioned.get("z", "other") is None  # only under its version

    sized = keep.SizedCache(100)
    sized.set("big", "x" * 13)  # over an eighth: not admitted
    assert "big" not in sized
    for i in range(20):
        sized.set(i, "y" * 10)
    assert sized.currsize <= 100 and len(sized) == 10 and 19 in sized and 9 not in sized


def test_entries_expire_when_no_rule_can_serve_them(parts):
    cache, clock, _refreshes, compute = parts
    cache.fetch("short", None, compute, keep.Policy(ttl=1.0))
    cache.fetch("long", None, compute, keep.Policy(ttl=1.0, stale_while_revalidate=600.0))
    cache.fetch("forever", "v", compute, keep.Policy())
    clock.advance(keep.SOFT_MAX_AGE_S)  # past a soft purge's grace too
    assert set(cache.snapshot()) == {"long", "forever"}
    clock.advance(600)
    assert set(cache.snapshot()) == {"forever"}


def test_versioned_entries_age_on_the_clock():
    clock = Clock()
    versioned = keep.VersionedCache(4, identity=True, clock=clock)
    mark = object()
    versioned.set("k", "value", mark)
    assert versioned.get("k", mark) == "value" and versioned.get("k", object()) is None
    clock.advance(10)
    assert versioned.peek("k", max_age=10).created == 1000.0
    versioned.set("k", "brought up to date", mark, created=versioned.peek("k").created)
    clock.advance(0.5)
    assert versioned.peek("k", max_age=10) is None and len(versioned) == 0


def test_values_persisted_across_a_restart_are_served_then_refreshed(tmp_path):
    clock, refreshes = Clock(), Refreshes()
    policy = keep.Policy(ttl=10.0, stale_while_revalidate=60.0)

    def persisted(key):
        return key == "chains"

    first = keep.StoreCache(persist_dir=tmp_path, persisted=persisted, clock=clock)
    first.fetch("chains", ["n", 1], lambda: {"a": ["a", "b"]}, policy)
    first.fetch("other", ["n", 1], lambda: 1, policy)
    assert len(list(tmp_path.iterdir())) == 1
    again = keep.StoreCache(persist_dir=tmp_path, persisted=persisted, clock=clock, start=refreshes)
    assert again.fetch("chains", ["n", 1], lambda: "fresh", policy) == {"a": ["a", "b"]}
    assert refreshes.run_all() == 1 and again.peek("chains") == "fresh"
    other = keep.StoreCache(persist_dir=tmp_path, persisted=persisted, clock=clock)
    assert other.fetch("chains", ["n", 2], lambda: "new", policy) == "new"  # another version


def test_close_drops_everything_for_good(parts):
    cache, _clock, _refreshes, compute = parts
    attached = cache.versioned(4, name="answers")
    assert cache.versioned(8, name="answers") is attached  # one per name
    attached.set("x", 1)
    cache.fetch("a", None, compute, keep.Policy())
    cache.close()
    assert cache.closed and len(attached) == 0 and cache.snapshot() == {}


def test_a_throttle_is_due_once_per_interval():
    clock = Clock()
    throttle = keep.Throttle(5.0, clock=clock)
    assert throttle.due() and not throttle.due()
    clock.advance(4.9)
    assert not throttle.due()
    clock.advance(0.1)
    assert throttle.due() and not throttle.due()
    throttle.reset()
    assert throttle.due()


def test_memoize_text_keeps_small_texts_only():
    calls = []

    @keep.memoize_text(800)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    assert shout("abc") == shout("abc") == "ABC" and calls == ["abc"]
    shout("x" * 101)
    shout("x" * 101)  # over an eighth: computed each time, never kept
    assert calls.count("x" * 101) == 2 and shout.cache.currsize <= 800
