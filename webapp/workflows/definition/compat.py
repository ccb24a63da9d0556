"""Which definition changes an open run survives, and what changed.

Compares two `shape`s (`fingerprint.shape`: per top-level step its name, kind
and content hash, plus the awaits). The rule: a run goes on under a changed
definition when the awaits are the same and every step it has already run
(and, for a suspended run, the step it waits at) is unchanged at the same
index. So a fixed mail text, or a step added, changed or removed after where
the run stands, is safe; a step inserted, removed or changed before it is not.
Pure: no database, no clock.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

ChangeKind = Literal["added", "removed", "renamed", "changed", "moved"]


@dataclass(frozen=True)
class StepChange:
    kind: ChangeKind
    name: str  # the step's name in the new definition (removed: in the old one)
    index: int  # its index in the new definition (removed: in the old one)
    old_name: str | None = None  # renamed
    old_index: int | None = None  # moved

    def describe(self) -> str:
        if self.kind == "removed":
            return f"step {self.name!r} removed (was at index {self.index})"
        if self.kind == "renamed":
            return f"step {self.old_name!r} renamed to {self.name!r} at index {self.index}"
        if self.kind == "moved":
            return f"step {self.name!r} moved from index {self.old_index} to {self.index}"
        return f"step {self.name!r} {self.kind} at index {self.index}"

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"change": self.kind, "step": self.name, "index": self.index}
        if self.old_name is not None:
            out["from"] = self.old_name
        if self.old_index is not None:
            out["fromIndex"] = self.old_index
        return out


def _steps(shape: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(shape.get("steps") or [])


def continues(
    old: Mapping[str, Any], new: Mapping[str, Any], step_index: int, waiting: bool
) -> bool:
    """May a run at `step_index` under `old` go on under `new`? `waiting`: it
    is suspended at that step (which must then be unchanged too)."""
    if old.get("awaits") != new.get("awaits"):
        return False
    before, after = _steps(old), _steps(new)
    upto = step_index + 1 if waiting else step_index
    if len(before) < upto or len(after) < upto:
        return False
    return all(_same(before[i], after[i]) for i in range(upto))


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("name") == b.get("name") and a.get("hash") == b.get("hash")


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[StepChange]:
    """What changed between two shapes, step by step (by name, in order)."""
    before, after = _steps(old), _steps(new)
    old_names = [s["name"] for s in before]
    new_names = [s["name"] for s in after]
    out: list[StepChange] = []
    matcher = difflib.SequenceMatcher(a=old_names, b=new_names, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out += [
                StepChange("changed", new_names[j1 + k], j1 + k)
                for k in range(i2 - i1)
                if before[i1 + k]["hash"] != after[j1 + k]["hash"]
            ]
            continue
        gone = list(range(i1, i2))
        came = list(range(j1, j2))
        if op == "replace":  # side by side: same content under a new name is a rename
            for i, j in zip(list(gone), list(came), strict=False):
                if before[i]["hash"] == after[j]["hash"] and new_names[j] not in old_names:
                    out.append(StepChange("renamed", new_names[j], j, old_name=old_names[i]))
                    gone.remove(i)
                    came.remove(j)
        for j in came:
            if new_names[j] in old_names:
                i = old_names.index(new_names[j])
                kind: ChangeKind = "moved" if before[i]["hash"] == after[j]["hash"] else "changed"
                out.append(StepChange(kind, new_names[j], j, old_index=i))
            else:
                out.append(StepChange("added", new_names[j], j))
        out += [
            StepChange("removed", old_names[i], i) for i in gone if old_names[i] not in new_names
        ]
    if old.get("awaits") != new.get("awaits"):
        out.append(StepChange("changed", "awaits", -1))
    return sorted(out, key=lambda c: (c.index, c.kind))


def counterpart(
    old: Mapping[str, Any], new: Mapping[str, Any], step_index: int, mapping: Mapping[str, str]
) -> int | None:
    """The index in `new` of the step a run waits at in `old` (by name, or the
    name `mapping` gives it), when it is the same kind of step; else None."""
    before, after = _steps(old), _steps(new)
    if not 0 <= step_index < len(before):
        return None
    name = before[step_index]["name"]
    target = mapping.get(name, name)
    for j, s in enumerate(after):
        if s["name"] == target:
            return j if s.get("kind") == before[step_index].get("kind") else None
    return None


def names(shape: Mapping[str, Any]) -> Sequence[str]:
    return [s["name"] for s in _steps(shape)]
