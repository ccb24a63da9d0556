"""The Redis connection (RQ queues, locks, rate limits). Redis only carries
"there is work"; the database is the truth."""

from __future__ import annotations

from functools import lru_cache

from redis import Redis

# Every client: a refused connection fails fast, an idle one is checked before use.
_CONNECT = {"socket_connect_timeout": 1, "health_check_interval": 30}


@lru_cache(maxsize=8)
def _client(url: str) -> Redis:
    return Redis.from_url(url, socket_timeout=5, **_CONNECT)


def get_redis() -> Redis:
    from flask import current_app

    return _client(current_app.config["APP_CONFIG"].redis_url)


def redis_for(url: str) -> Redis:
    return _client(url)


def worker_client(url: str) -> Redis:
    """A client of its own for RQ's worker loop, which blocks on BLPOP for
    minutes. RQ raises the socket timeout of the pool it is given above that
    wait (on the pool's settings: only connections made afterwards get it).
    On the shared pool, connections the worker's threads had made before kept
    5 s, so a BLPOP on one timed out and RQ logged "could not connect to Redis
    instance" every few seconds while idle; the threads' later connections got
    RQ's 7-minute timeout instead of 5 s."""
    return Redis.from_url(url, **_CONNECT)  # socket timeout: RQ's
