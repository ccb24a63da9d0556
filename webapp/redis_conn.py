"""The Redis connection (RQ queues, locks, rate limits). Redis only carries
"there is work"; the database is the truth."""

from __future__ import annotations

from functools import lru_cache

from redis import Redis


@lru_cache(maxsize=8)
def _client(url: str) -> Redis:
    return Redis.from_url(url, socket_connect_timeout=1, socket_timeout=5, health_check_interval=30)


def get_redis() -> Redis:
    from flask import current_app

    return _client(current_app.config["APP_CONFIG"].redis_url)


def redis_for(url: str) -> Redis:
    return _client(url)
