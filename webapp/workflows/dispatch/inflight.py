"""What a worker is about to claim, kept in Redis while it works on it, so
that its death does not leave it to the minute sweep.

Taking a request and recording it as in flight are one Redis step, so a
kill can fall before it (the request is still on the list, or still a timer)
or after it (the request is in flight), never between the two:
- the resume loop moves requests from the resume list into its own list,
  `webapp:wf:taking:<holder>`, in one script (`take`), or with `BLMOVE` when
  it waits for the next one, and empties it once the batch is handled;
- the timer's claim script (`timer_loop.claim_due`) removes due members from
  the timer set and, in the same script, pushes them onto the resume list, or
  puts those it must hand to RQ (no resume loop alive, a run's control) in
  the holder's in-flight set until the job is enqueued.

A resume request popped from the resume list, or an advance or resume job,
is claimed only after its continuation ran ahead (`engine.resume`: the
pure steps up to the next stop run before the claim, so that the claim's
transaction commits them too). Until that claim commits, the database shows
nothing of the worker: no lease, no holder. So while it works on them, the
worker keeps the requests ("tenant|run|step", as on the resume list) in a set
of its own, `webapp:wf:inflight:<holder>` (`tracked`). Should it die, the
timer of another worker (`reap`, every lease check) finds its liveness key
gone (`holders.dead`, with the same guard against a flushed Redis), and
pushes the requests back onto the resume list, in one script, once. A
second claim of a step already resumed answers already-resumed, a second
advance of a leased run answers leased: a request pushed back twice is
harmless. Redis losing the set loses only the speed-up: the pending rows and
the start grace of a new run are still the database's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redis import Redis
from redis.exceptions import RedisError

from webapp.core.redis_conn import get_redis
from webapp.workflows.dispatch import holders, signals
from webapp.workflows.engine import heartbeat

log = logging.getLogger("webapp.workflows")

PREFIX = "webapp:wf:inflight:"
TAKING_PREFIX = "webapp:wf:taking:"

# Push a dead holder's requests (its in-flight set and the batch its resume
# loop had taken) back onto the resume list, drop both and its name from the
# registry: one script, so exactly one reaper does it.
_REAP = """
local members = redis.call('SMEMBERS', KEYS[1])
for _, m in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do
  table.insert(members, m)
end
if #members > 0 then
  redis.call('RPUSH', KEYS[2], unpack(members))
end
redis.call('DEL', KEYS[1], KEYS[4])
redis.call('SREM', KEYS[3], ARGV[1])
return #members
"""

# The resume loop takes up to ARGV[1] requests from the head of the resume
# list into its taking list, and returns the whole taking list: what an
# earlier batch left there (an outage stopped its give-back) comes first.
_TAKE = """
local items = redis.call('LRANGE', KEYS[1], 0, ARGV[1] - 1)
if #items > 0 then
  redis.call('LTRIM', KEYS[1], #items, -1)
  redis.call('RPUSH', KEYS[2], unpack(items))
end
return redis.call('LRANGE', KEYS[2], 0, -1)
"""

# Give the taken batch back: to the head of the resume list, in its order.
_GIVE_BACK = """
local items = redis.call('LRANGE', KEYS[2], 0, -1)
for i = #items, 1, -1 do
  redis.call('LPUSH', KEYS[1], items[i])
end
redis.call('DEL', KEYS[2])
return #items
"""


def key(holder: str) -> str:
    return PREFIX + holder


def taking_key(holder: str) -> str:
    return TAKING_PREFIX + holder


def take(r: Redis, holder: str, batch: int, block_s: float) -> list[Any]:
    """The resume loop's next batch, moved into `holder`'s taking list in the
    same step as it leaves the resume list: the waiting requests (up to
    `batch`); when there are none, wait up to `block_s` for the next one."""
    taken = list(r.eval(_TAKE, 2, signals.RESUME_KEY, taking_key(holder), batch))
    if taken:
        return taken
    # BLMOVE takes a fractional timeout (Redis 6+); redis-py types it as int
    one = r.blmove(signals.RESUME_KEY, taking_key(holder), block_s, "LEFT", "RIGHT")  # type: ignore[arg-type]
    return [] if one is None else [one]


def done(r: Redis, holder: str) -> None:
    """The taken batch is handled (its claims committed, or left to the sweep)."""
    r.delete(taking_key(holder))


def give_back(r: Redis, holder: str) -> int:
    """Put the taken batch back at the head of the resume list (an outage or a
    stop interrupted it); returns how many."""
    return int(r.eval(_GIVE_BACK, 2, signals.RESUME_KEY, taking_key(holder)))


@contextmanager
def tracked(members: list[str]) -> Iterator[None]:
    """Keep these requests in this process's in-flight set while the block
    runs (nothing when the process keeps no liveness key, or Redis does not
    answer: the database's nets remain)."""
    name = heartbeat.holder()
    r: Redis | None = None
    if name is not None and members:
        try:
            r = get_redis()
            r.sadd(key(name), *members)
        except RedisError as exc:
            log.debug("in-flight requests not kept", extra={"error_class": type(exc).__name__})
            r = None
    try:
        yield
    finally:
        if r is not None and name is not None:
            try:
                r.srem(key(name), *members)
            except RedisError as exc:
                log.debug("in-flight requests left", extra={"error_class": type(exc).__name__})


def reap(r: Redis, name: str) -> int:
    """Push the in-flight requests of every dead holder back onto the resume
    list (as checked by the process `name`); returns how many."""
    registered = {m.decode() if isinstance(m, bytes) else m for m in r.smembers(holders.REGISTRY)}
    pushed = 0
    for holder in sorted(holders.dead(r, name, registered)):
        n = int(
            r.eval(
                _REAP,
                4,
                key(holder),
                signals.RESUME_KEY,
                holders.REGISTRY,
                taking_key(holder),
                holder,
            )
        )
        if n:
            log.info("worker gone: its requests resumed", extra={"holder": holder, "requests": n})
        pushed += n
    return pushed
