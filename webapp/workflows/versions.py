"""Changing workflows with runs in flight: the versions list, the deploy
check, and migrating open runs to another version (`flask workflows
versions|check|migrate`, the console's run page and /admin/stuck).

The check reads, never writes: for every open run whose definition is not
the one in the code (changed, or its version gone) it says what changed,
where those runs stand, and whether they go on (`compat.continues`) or would
fail with workflow_definition_changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from webapp.workflows.definition import catalog, compat
from webapp.workflows.definition.compat import StepChange
from webapp.workflows.engine.resume import fits
from webapp.workflows.store import definitions, queries, runs
from webapp.workflows.store import run_events as ev
from webapp.workflows.store.run_events import RunStatus


class MigrationError(Exception):
    """A migration that cannot be done (the message names the runs and why)."""


# -- versions --------------------------------------------------------------------


@dataclass(frozen=True)
class VersionInfo:
    workflow: str
    version: int
    in_code: bool
    starts: bool  # new triggers start this version
    open_runs: int


def versions(conn: Connection) -> list[VersionInfo]:
    """Every workflow version in the code or with open runs in the database."""
    counts: dict[tuple[str, int], int] = {}
    for p in queries.open_positions(conn):
        key = (p.workflow_name, int(p.definition_version))
        counts[key] = counts.get(key, 0) + int(p.runs)
    keys = set(counts) | {(wf.name, wf.version) for wf in catalog.registered()}
    out = []
    for name, version in sorted(keys):
        wf = catalog.get(name, version)
        starting = catalog.get(name)
        out.append(
            VersionInfo(
                name,
                version,
                wf is not None,
                starting is not None and starting.version == version,
                counts.get((name, version), 0),
            )
        )
    return out


# -- the deploy check ------------------------------------------------------------


@dataclass(frozen=True)
class Position:
    runs: int
    status: str
    step_index: int
    step: str | None  # its name in the run's own definition, when known
    fails: bool

    def describe(self) -> str:
        noun = "run" if self.runs == 1 else "runs"
        where = f"step {self.step!r}" if self.step else f"step {self.step_index}"
        doing = "waiting at" if self.status == RunStatus.SUSPENDED else f"{self.status} at"
        verdict = "would fail" if self.fails else "go on"
        return f"{self.runs} {noun} {doing} {where} (index {self.step_index}): {verdict}"


@dataclass(frozen=True)
class Finding:
    """Open runs of one workflow version whose definition is not the code's."""

    workflow: str
    version: int
    problem: str  # "changed" | "version-gone" | "workflow-gone"
    changes: list[StepChange]
    positions: list[Position]
    shape_known: bool = True

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.positions)

    @property
    def fails(self) -> bool:
        return any(p.fails for p in self.positions)

    def as_json(self) -> dict[str, Any]:
        return {
            "workflow": self.workflow,
            "version": self.version,
            "problem": self.problem,
            "runs": self.runs,
            "fails": self.fails,
            "changes": [c.as_json() for c in self.changes],
            "diffKnown": self.shape_known,
            "positions": [
                {
                    "runs": p.runs,
                    "status": str(p.status),
                    "stepIndex": p.step_index,
                    "step": p.step,
                    "fails": p.fails,
                }
                for p in self.positions
            ],
        }


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    open_runs: int = 0

    @property
    def ok(self) -> bool:
        return not any(f.fails for f in self.findings)

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "openRuns": self.open_runs,
            "findings": [f.as_json() for f in self.findings],
        }


def check(conn: Connection) -> Report:
    """Compare the definitions in the code with the open runs (reads only)."""
    positions = queries.open_positions(conn)
    report = Report(open_runs=sum(int(p.runs) for p in positions))
    groups: dict[tuple[str, int, str], list[Any]] = {}
    for p in positions:
        wf = catalog.get(p.workflow_name, p.definition_version)
        if wf is not None and wf.fingerprint == p.fingerprint:
            continue  # unchanged: nothing to say
        groups.setdefault((p.workflow_name, int(p.definition_version), p.fingerprint), []).append(p)
    shapes = definitions.shapes(conn, {fp for _, _, fp in groups})
    merged: dict[tuple[str, int], Finding] = {}
    for (name, version, fp), rows in sorted(groups.items()):
        finding = _finding(name, version, shapes.get(fp), rows)
        before = merged.get((name, version))
        if before is not None:  # runs of one version under several old definitions
            finding = Finding(
                name,
                version,
                finding.problem,
                before.changes + [c for c in finding.changes if c not in before.changes],
                before.positions + finding.positions,
                before.shape_known and finding.shape_known,
            )
        merged[(name, version)] = finding
    report.findings = list(merged.values())
    return report


def run_finding(conn: Connection, row: Any) -> Finding | None:
    """The check for one run (the console's run page): None when its
    definition is the code's, or it has settled."""
    if row.status not in ev.OPEN:
        return None
    wf = catalog.get(row.workflow_name, row.definition_version)
    if wf is not None and wf.fingerprint == row.fingerprint:
        return None
    position = _Position1(row.status, row.step_index, row.fingerprint)
    old = definitions.shapes(conn, [row.fingerprint]).get(row.fingerprint)
    return _finding(row.workflow_name, row.definition_version, old, [position])


@dataclass(frozen=True)
class _Position1:  # one run, in the shape of an `open_positions` row
    status: str
    step_index: int
    fingerprint: str
    runs: int = 1


def _finding(name: str, version: int, old: Mapping[str, Any] | None, rows: list[Any]) -> Finding:
    wf = catalog.get(name, version)
    problem = (
        "changed"
        if wf is not None
        else ("version-gone" if catalog.versions(name) else "workflow-gone")
    )
    changes = compat.diff(old, wf.shape) if (wf is not None and old is not None) else []
    step_names = list(compat.names(old)) if old is not None else []
    positions = []
    for p in rows:
        waiting = p.status == RunStatus.SUSPENDED
        step = step_names[p.step_index] if p.step_index < len(step_names) else None
        fails = fits(wf, p.fingerprint, old, p.step_index, waiting) is None
        positions.append(Position(int(p.runs), str(p.status), int(p.step_index), step, fails))
    return Finding(name, version, problem, changes, positions, old is not None)


def describe(report: Report) -> list[str]:
    """The check's report as text lines."""
    if not report.findings:
        return [f"ok: all {report.open_runs} open runs match the definitions in the code"]
    lines = []
    for f in report.findings:
        head = {
            "changed": "definition changed",
            "version-gone": f"version {f.version} is not in the code",
            "workflow-gone": "workflow is not in the code",
        }[f.problem]
        verdict = "FAILS" if f.fails else "safe"
        lines.append(f"{verdict}: {f.workflow} v{f.version}: {head}; {f.runs} open runs")
        lines += [f"  {c.describe()}" for c in f.changes]
        if f.problem == "changed" and not f.shape_known:
            lines.append("  (no step diff: these runs started before definitions were recorded)")
        lines += [f"  {p.describe()}" for p in f.positions]
    lines.append("ok: no open run would fail" if report.ok else "open runs would fail: see above")
    return lines


# -- migrating open runs ---------------------------------------------------------


@dataclass(frozen=True)
class Move:
    tenant_id: str
    run_id: str
    from_step: int
    to_step: int
    step: str


@dataclass
class Plan:
    moves: list[Move] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # running: not at a step boundary


def parse_map(pairs: list[str]) -> dict[str, str]:
    """`old=new` pairs (ValueError names a malformed one)."""
    out: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise ValueError(f"--map takes old_step=new_step, got {pair!r}")
        out[old.strip()] = new.strip()
    return out


def migrate(
    conn: Connection,
    name: str,
    from_version: int,
    to_version: int,
    mapping: Mapping[str, str] | None = None,
    dry_run: bool = False,
    run_id: str | None = None,
    actor: str | None = None,
) -> Plan:
    """Move the open runs of `name` v`from_version` that wait at a step to
    v`to_version` (its definition in the code), each with run-migrated. All or
    nothing: MigrationError names every run whose step has no counterpart."""
    mapping = dict(mapping or {})
    target = catalog.get(name, to_version)
    if target is None:
        raise MigrationError(f"workflow {name!r} version {to_version} is not in the code")
    unknown = sorted(set(mapping.values()) - set(compat.names(target.shape)))
    if unknown:
        raise MigrationError(
            f"--map names steps that v{to_version} does not have: {', '.join(unknown)}"
        )
    rows = queries.open_runs_at(conn, name, from_version, run_id)
    if run_id is not None and not rows:
        raise MigrationError(f"run {run_id} is not an open run of {name!r} v{from_version}")
    shapes = definitions.shapes(conn, {r.fingerprint for r in rows})
    source = catalog.get(name, from_version)
    plan, refused = Plan(), []
    for row in rows:
        if row.status != RunStatus.SUSPENDED:
            plan.skipped.append(row.run_id)
            continue
        old = shapes.get(row.fingerprint) or (
            source.shape if source is not None and source.fingerprint == row.fingerprint else None
        )
        to = compat.counterpart(old, target.shape, row.step_index, mapping) if old else None
        step = (
            compat.names(old)[row.step_index] if old and row.step_index < len(old["steps"]) else "?"
        )
        if to is None:
            refused.append(f"{row.run_id} (waiting at step {step!r})")
            continue
        plan.moves.append(Move(row.tenant_id, row.run_id, row.step_index, to, step))
    if refused:
        raise MigrationError(
            f"{len(refused)} runs wait at a step v{to_version} has no counterpart for "
            f"(map it with --map old_step=new_step): {', '.join(refused)}"
        )
    if dry_run:
        return plan
    if plan.moves:
        definitions.record(conn, target)
    by_id = {r.run_id: r for r in rows}
    for m in plan.moves:
        row = by_id[m.run_id]
        payload = ev.run_migrated(
            name, from_version, to_version, m.from_step, m.to_step, target.fingerprint, mapping
        )
        runs.append_run_event(conn, row, ev.RUN_MIGRATED, payload, actor)
        if mapping and row.results:
            renamed = {mapping.get(k, k): v for k, v in row.results.items()}
            runs.save(conn, row, results=renamed)
    return plan
