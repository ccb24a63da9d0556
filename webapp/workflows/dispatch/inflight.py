"""What a worker is about to claim, kept in Redis while it works on it, so
that its death does not leave it to the minute sweep.

A resume request popped from the resume list, or an advance or resume job,
is claimed only after its continuation ran ahead (`engine.settle_ahead`: the
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

from redis import Redis
from redis.exceptions import RedisError

from webapp.redis_conn import get_redis
from webapp.workflows.dispatch import holders, signals
from webapp.workflows.engine import heartbeat

log = logging.getLogger("webapp.workflows")

PREFIX = "webapp:wf:inflight:"

# Push a dead holder's requests back onto the resume list, drop its set and
# its name from the registry: one script, so exactly one reaper does it.
_REAP = """
local members = redis.call('SMEMBERS', KEYS[1])
if #members > 0 then
  redis.call('RPUSH', KEYS[2], unpack(members))
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], ARGV[1])
return #members
"""


def key(holder: str) -> str:
    return PREFIX + holder


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
        n = int(r.eval(_REAP, 3, key(holder), signals.RESUME_KEY, holders.REGISTRY, holder))
        if n:
            log.info("worker gone: its requests resumed", extra={"holder": holder, "requests": n})
        pushed += n
    return pushed
