"""Durations and instants: what `wait` and timeouts accept."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any


def parse_duration(value: str) -> timedelta:
    """ISO-8601 durations: PnDTnHnMnS (weeks `PnW` too; no months or years)."""
    m = re.fullmatch(
        r"P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
        r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
        value.strip().upper(),
    )
    if not m or value.strip().upper() in ("P", "PT") or value.strip().upper().endswith("T"):
        raise ValueError(f"not an ISO-8601 duration: {value!r} (expected e.g. PT10M, P1D)")
    parts = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
    return timedelta(
        weeks=parts["w"], days=parts["d"], hours=parts["h"], minutes=parts["m"], seconds=parts["s"]
    )


def to_instant(value: Any, now: datetime) -> datetime:
    """A wait target: timedelta / seconds / ISO duration from now, or an aware datetime."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("wait until a naive datetime: give a timezone-aware one")
        return value
    if isinstance(value, timedelta):
        return now + value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return now + timedelta(seconds=value)
    if isinstance(value, str):
        return now + parse_duration(value)
    raise ValueError(f"cannot wait for {value!r}")
