"""The registry of named jobs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from croniter import croniter

# A job function gets the tenant id (None when not per tenant) and the tick time.
JobFunc = Callable[[str | None, datetime], None]


@dataclass(frozen=True)
class JobSpec:
    name: str
    func: JobFunc
    cron: str | None = None
    per_tenant: bool = True
    concurrency: Literal["skip", "allow"] = "skip"
    timeout: int = 600  # seconds; also how long a `skip` lock may live

    @property
    def schedule_id(self) -> str:
        return f"cron-{self.name}"


_jobs: dict[str, JobSpec] = {}


def job(
    name: str,
    cron: str | None = None,
    per_tenant: bool = True,
    concurrency: Literal["skip", "allow"] = "skip",
    timeout: int = 600,
) -> Callable[[JobFunc], JobFunc]:
    """Decorator: register `func` as the named job."""

    def decorate(func: JobFunc) -> JobFunc:
        register_job(JobSpec(name, func, cron, per_tenant, concurrency, timeout))
        return func

    return decorate


def register_job(spec: JobSpec) -> JobSpec:
    if not spec.name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"job name {spec.name!r}: letters, digits, - and _ only")
    if spec.cron is not None and not croniter.is_valid(spec.cron):
        raise ValueError(f"job {spec.name!r}: invalid cron expression {spec.cron!r}")
    _jobs[spec.name] = spec
    return spec


def unregister_job(name: str) -> None:
    _jobs.pop(name, None)


def get_job(name: str) -> JobSpec:
    try:
        return _jobs[name]
    except KeyError:
        raise LookupError(f"no job named {name!r}") from None


def registered_jobs() -> list[JobSpec]:
    return list(_jobs.values())
