"""Restoring a backup (`flask backup restore PATH`) and the start-up checks
that follow it (`flask backup check`, also run at the end of a restore).

A restore, in order: the backup is verified; it must be of this backend and
of a schema this release knows; no process of the product may run
(`running`); the database as it is now is kept (SQLite: its files renamed
`*.before-restore-<time>`; PostgreSQL: a dump `before-restore-<time>.pgdump`
in the instance folder); the backup is put in place (`sqlite_copy`,
`pg_dump`), with the secret key and the exports; Redis is flushed (it only
says "there is work", and what it says now is about the database that was
replaced); migrations are applied up to this release; then the start-up
checks run.

The start-up checks say what the product will do when its processes start:
the database holds what the manifest says (events, streams, runs, waits,
mails), the schema is at head, every projection is caught up (they are run
here), how many waits the workers' timers will load from the database, which
runs were inside a step at backup time (they continue when their lease
expires) and which mails the outbox will send (a mail marked sent in the
backup is never sent again). A restore also drops the claims the backup's
workers held on mails they were sending, and queues every due mail, so the
outbox goes on as soon as a worker starts.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy import text

from webapp.backup import archive, contents, pg_dump, running, sqlite_copy
from webapp.backup.archive import BackupError
from webapp.backup.create import backend_of, verify
from webapp.core import clock, db
from webapp.core.config import Config
from webapp.core.sqlite_setup import SqliteTuning
from webapp.eventstore import projections
from webapp.mail.outbox import delivery as outbox
from webapp.mail.outbox.jobs import queue_due

OPEN = ("queued", "running", "suspended")
CATCH_UP_S = 30.0


@dataclass
class Report:
    """What a restore or a check found: lines to print, and the problems."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.lines.append(line)

    def problem(self, line: str) -> None:
        self.problems.append(line)
        self.lines.append(f"PROBLEM: {line}")


def _known_revisions(url: str) -> tuple[set[str], set[str]]:
    """Every revision this release knows, and its heads. Alembic is imported
    here, when a restore or a check runs: every process builds the app, and
    with it this package (as `webapp.health.readiness` does)."""
    from alembic.script import ScriptDirectory

    from webapp.core.migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config(url))
    return {r.revision for r in script.walk_revisions()}, set(script.get_heads())


def preflight(cfg: Config, path: Path, redis: Redis) -> dict[str, Any]:
    """Everything a restore checks before it touches anything; the manifest."""
    manifest, problems = verify(path)
    if problems:
        raise BackupError("the backup is damaged: " + "; ".join(problems[:5]))
    backend = backend_of(cfg.database_url)
    if manifest["backend"] != backend:
        raise BackupError(
            f"the backup is of {manifest['backend']}, the database in use is {backend}"
        )
    known, _heads = _known_revisions(cfg.database_url)
    applied = set(filter(None, manifest["contents"]["migration"].split(",")))
    if not applied <= known:
        raise BackupError(
            f"the backup's schema ({', '.join(sorted(applied))}) is from a newer release "
            f"than this one: restore it with release {manifest['release']} or later"
        )
    db.get_engine().dispose()  # this process's own connections are not "another process"
    alive, note = running.in_redis(redis)
    if backend == "sqlite":
        alive += running.holding_file(sqlite_copy.database_path(cfg.database_url))
    else:
        alive += pg_dump.other_sessions(cfg.database_url)
    if alive:
        raise BackupError(
            "refusing to restore while the product runs: "
            + "; ".join(alive[:10])
            + ". Stop the web, worker and scheduler processes first (a killed worker's "
            "key lapses within 2 s, the scheduler's within 11 s), then run this again."
            + (f" ({note})" if note else "")
        )
    if note:
        manifest["_redis_note"] = note
    return manifest


def restore(cfg: Config, path: Path, redis: Redis, safety_copy: bool = True) -> Report:
    report = Report()
    manifest = preflight(cfg, path, redis)
    if note := manifest.pop("_redis_note", None):
        report.say(f"note: {note}; the database says nothing else runs")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    database = path / manifest["database"]
    if manifest["backend"] == "sqlite":
        live = sqlite_copy.database_path(cfg.database_url)
        kept = sqlite_copy.swap_in(database, live, stamp)
        if kept:
            report.say("the database as it was is kept: " + ", ".join(str(p) for p in kept))
    else:
        if safety_copy:
            cfg.instance_path.mkdir(parents=True, exist_ok=True)
            before = cfg.instance_path / f"before-restore-{stamp}.pgdump"
            pg_dump.safety_copy(cfg.database_url, before)
            report.say(f"the database as it was is kept: {before}")
        pg_dump.restore(cfg.database_url, database)
    report.say(f"restored the database from {path} (taken {manifest['created_at']})")
    _secret_key(cfg, path, manifest, stamp, report)
    _exports(cfg, path, report)
    try:
        redis.flushdb()
        report.say("Redis flushed: its queues and timers are rebuilt from the database at start")
    except (RedisError, OSError) as exc:
        report.say(
            f"Redis did not answer ({type(exc).__name__}): flush the product's Redis database "
            "before starting (stale entries would only wake a worker for nothing)"
        )
    db.init_engine(cfg.database_url, SqliteTuning(cfg.sqlite_cache_mb, cfg.sqlite_mmap_mb))
    known, heads = _known_revisions(cfg.database_url)
    with db.reading() as conn:
        applied = set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
    if applied != heads:
        from webapp.core.migrate import upgrade  # Alembic: only when a restore runs

        upgrade(cfg.database_url)
        report.say(
            f"migrations applied: {', '.join(sorted(applied))} -> {', '.join(sorted(heads))}"
        )
        manifest["contents"]["migration"] = ",".join(sorted(heads))
    _outbox(report)
    startup_checks(cfg, report, manifest["contents"])
    return report


def _outbox(report: Report) -> None:
    """The backup's workers are gone: their claims on mails are dropped (such
    a mail is sent, perhaps a second time, rather than never), and every due
    mail is queued for the first worker that starts."""
    released = outbox.release_claims()
    if released:
        report.say(
            f"mail outbox: {released} mails were being sent when the backup was taken; "
            "whether they went out is not in the backup, so they are sent again"
        )
    queue_due()  # when Redis is down, the minute sweep queues them once it answers


def _secret_key(
    cfg: Config, path: Path, manifest: dict[str, Any], stamp: str, report: Report
) -> None:
    saved = path / archive.SECRET_FILE
    current = cfg.instance_path / "secret_key"
    if saved.exists():
        if current.exists() and current.read_text() != saved.read_text():
            current.rename(current.with_name(f"secret_key.before-restore-{stamp}"))
        if not current.exists():
            cfg.instance_path.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(saved, current)
            current.chmod(0o600)
        report.say(f"secret key restored to {current}")
    elif manifest["secret_key"]["fingerprint"] != archive.key_fingerprint(cfg.secret_key):
        report.say(
            "note: the SECRET_KEY in use is not the one of the backup: sessions and signed "
            "links from before it are refused (set the old key, or let users sign in again)"
        )


def _exports(cfg: Config, path: Path, report: Report) -> None:
    """Export files of the backup that are missing now (newer ones stay)."""
    source = path / archive.EXPORTS
    if not source.is_dir():
        return
    n = 0
    for f in sorted(source.rglob("*")):
        target = cfg.exports_path / f.relative_to(source)
        if f.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
            n += 1
    report.say(f"exports restored: {n} files")


def _catch_up(cfg: Config, within_s: float = CATCH_UP_S) -> tuple[int, list[dict[str, Any]]]:
    """Run every projection until none is behind, or `within_s` passed: a
    PostgreSQL backup may hold holes (positions drawn by transactions that had
    not committed when it was taken), which readers pass only once they have
    seen that no transaction can still fill them (docs/operations.md, "What
    the database guarantees")."""
    applied = 0
    deadline = time.monotonic() + within_s
    while True:
        applied += projections.run_all(cfg.projection_max_attempts).applied
        with db.reading() as conn:
            behind = [r for r in projections.status(conn) if r["registered"] and r["lag"]]
        if not behind or time.monotonic() > deadline:
            return applied, behind
        time.sleep(0.2)


def startup_checks(
    cfg: Config, report: Report | None = None, expected: dict[str, Any] | None = None
) -> Report:
    """What the processes will find when they start (see the module's docstring)."""
    report = report or Report()
    engine = db.get_engine()
    if db.is_sqlite(engine):
        with engine.connect() as conn:
            rows = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check").fetchall()]
        if rows == ["ok"]:
            report.say("integrity: ok")
        else:
            report.problem("integrity: " + "; ".join(rows[:5]))
    _known, heads = _known_revisions(cfg.database_url)
    with db.reading() as conn:
        found = contents.summary(conn)
    if found["migration"] == ",".join(sorted(heads)):
        report.say("schema: at head")
    else:
        report.problem(
            f"schema: at {found['migration']}, this release needs {','.join(sorted(heads))}: run `flask db upgrade`"
        )
    if expected is not None:
        differ = contents.differences(expected, found)
        if differ:
            report.problem("the database does not hold what the backup holds: " + "; ".join(differ))
        else:
            report.say(
                f"contents: as in the backup: {found['events']} events (head {found['head_position']}) "
                f"in {found['streams']} streams, runs {found['runs']}, {found['waits']} waits, "
                f"mails {found['mails']}"
            )
    applied, behind = _catch_up(cfg)
    failing = [r for r in behind if r["attempts"] or r["retry_at"]]
    if failing:
        report.problem(
            "projections failing: "
            + ", ".join(f"{r['name']} ({r['attempts']} attempts)" for r in failing)
            + " (see `flask projections status` and `flask projections parked`)"
        )
    elif behind:
        # Not failing: held at a hole of a PostgreSQL backup (a number drawn by
        # a transaction that had not committed when it was taken), which readers
        # pass once every transaction now open on the server has ended.
        report.say(
            "projections: behind a hole the backup holds: "
            + ", ".join(f"{r['name']} ({r['lag']} events)" for r in behind)
            + "; the workers pass it once every transaction open on the server now has "
            "ended (a session left idle in a transaction holds it; see "
            "`flask projections status`)"
        )
    else:
        report.say(f"projections: at head (applied {applied} events now)")
    now = clock.now()
    bind = {"now": now if not db.is_sqlite(engine) else now.replace(tzinfo=None).isoformat(" ")}
    with db.reading() as conn:
        due = conn.execute(
            text("SELECT count(*) FROM workflow_run_pending WHERE wake_at <= :now"), bind
        ).scalar_one()
        held, until = conn.execute(
            text(
                "SELECT count(*), max(lease_until) FROM workflow_runs "
                "WHERE lease_until IS NOT NULL AND status IN ('queued', 'running', 'suspended')"
            )
        ).one()
        claimed = conn.execute(
            text(
                "SELECT count(*) FROM mail_outbox WHERE status = 'pending' "
                "AND lease_until IS NOT NULL"
            )
        ).scalar_one()
        owed = conn.execute(
            text("SELECT count(*) FROM workflow_run_pending WHERE lookback_due")
        ).scalar_one()
    open_runs = {s: n for s, n in found["runs"].items() if s in OPEN}
    report.say(
        f"waits: {found['waits']} (timers and awaited events), {due} due now: the workers' "
        "timers load them from the database when they start"
    )
    report.say(f"open runs: {open_runs or 'none'}: they continue when a worker starts")
    if owed:
        report.say(
            f"{owed} waits for an event had not yet looked back for one that came first: "
            "the first minute sweep does it"
        )
    if held:
        report.say(
            f"{held} runs were inside a step when the backup was taken: they continue once "
            f"their lease expires (at the latest {until})"
        )
    mails = found["mails"]
    report.say(
        f"mail outbox: {mails.get('pending', 0)} to send ({claimed} being sent now: sent once "
        f"their claim expires), {mails.get('sent', 0)} sent (never sent again), "
        f"{mails.get('failed', 0)} failed"
    )
    return report
