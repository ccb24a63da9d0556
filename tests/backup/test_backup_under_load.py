"""A backup taken while the product works, restored into a fresh directory
(a new SQLite file, or a new PostgreSQL database), with real worker and
scheduler processes and the real `flask backup` commands:

- every event committed before the backup began is in the restored database,
  each at the stream and version it had, and every stream's versions run 1..n;
- restoring is refused while a worker runs;
- after the restore a worker and a scheduler carry on: every order placed in
  the backup has exactly one run (none lost, none doubled) and each completes;
- a mail marked sent in the backup is not sent again; one still pending is
  sent exactly once.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests import procs
from tests.support.accounts import register
from tests.support.web import FreshGClient
from webapp import create_app
from webapp.backup import running
from webapp.core import db
from webapp.eventstore import projections
from webapp.publish import publish

MODULE = "tests.backup.flows"


@contextlib.contextmanager
def fresh_database(database_url: str, tmp_path: Path) -> Iterator[str]:
    """An empty database of the same backend, in a place of its own."""
    if database_url.startswith("sqlite"):
        folder = tmp_path / "fresh"
        folder.mkdir()
        yield f"sqlite:///{folder / 'app.db'}"
        return
    base = make_url(database_url)
    name = f"{base.database}_fresh"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield base.set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def query(url: str, sql: str) -> list[Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql)).all())
    finally:
        engine.dispose()


def events_of(url: str, upto: int | None = None) -> dict[str, tuple[str, str, int]]:
    """id -> (stream, version) of every event (up to position `upto`)."""
    rows = query(url, "SELECT id, aggregate_type, aggregate_id, version, position FROM events")
    return {
        r.id: (r.aggregate_type, r.aggregate_id, r.version)
        for r in rows
        if upto is None or r.position <= upto
    }


def runs_per_order(url: str) -> tuple[Counter[str], Counter[str]]:
    rows = query(
        url, "SELECT subject_id, status FROM workflow_runs WHERE workflow_name = 'bk-order'"
    )
    return Counter(r.subject_id for r in rows), Counter(r.status for r in rows)


def mails_to(folder: Path) -> Counter[str]:
    out: Counter[str] = Counter()
    for eml in folder.glob("*.eml") if folder.is_dir() else ():
        for line in eml.read_text(errors="replace").splitlines():
            if line.startswith("To: "):
                out[line[4:].strip()] += 1
    return out


class Load:
    """Orders (workflow triggers, half of them paid) and registrations through
    the web (each commits an account and its verification mail), from two
    threads, until stopped."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.stop = threading.Event()
        self.orders = 0
        self.registered = 0
        self.errors: list[str] = []
        self.threads = [
            threading.Thread(target=self._guard, args=(self._orders,)),
            threading.Thread(target=self._guard, args=(self._web,)),
        ]

    def _guard(self, fn: Any) -> None:
        try:
            with self.app.app_context():
                fn()
        except Exception as exc:  # the test fails on it, with the reason
            self.errors.append(repr(exc))

    def _orders(self) -> None:
        while not self.stop.is_set():
            n = self.orders
            publish("bk.placed", "order", f"o{n}", {}, app=self.app)
            if n % 2 == 0 and n >= 4:
                publish("bk.paid", "payment", f"o{n - 4}", {"order": f"o{n - 4}"}, app=self.app)
            self.orders += 1
            time.sleep(0.05)

    def _web(self) -> None:
        client = self.app.test_client()
        while not self.stop.is_set():
            # each from an address of its own: the per-address registration limit
            n = self.registered
            client.environ_base["REMOTE_ADDR"] = f"127.1.{n // 250}.{n % 250 + 1}"
            resp = register(client, f"user{self.registered}@example.com")
            assert resp.status_code == 200, resp.status_code
            self.registered += 1

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


def mounted() -> bool:
    with db.reading() as conn:
        return any(r["name"] == "workflow-bk-order" for r in projections.status(conn))


def test_backup_under_load_restored_fresh_loses_and_doubles_nothing(
    private, database_url, tmp_path, make_config, backend
):
    server, r = private
    app = create_app(make_config(redis_url=server.url))
    app.test_client_class = FreshGClient
    live_env = procs.app_env(database_url, server.url, tmp_path / "live", WORKFLOW_MODULES=MODULE)
    backup = tmp_path / "backup"
    worker = procs.worker(live_env, tmp_path / "worker.log")
    scheduler = procs.scheduler(live_env, tmp_path / "scheduler.log")
    try:
        procs.until(mounted, what="trigger cursor mounted by the worker")
        with Load(app) as load:
            procs.until(lambda: load.orders > 20 and load.registered > 3, what="load going")
            procs.until(  # the backup then holds mails already sent, and pending ones
                lambda: query(database_url, "SELECT 1 FROM mail_outbox WHERE status = 'sent'"),
                what="a mail sent before the backup",
            )
            before = events_of(database_url)
            made = procs.flask(live_env, "backup", "create", str(backup), timeout=180)
            during = (load.orders, load.registered)
            procs.until(lambda: load.orders > during[0] + 10, what="load after the backup")
        assert not load.errors, load.errors
        assert made.returncode == 0, made.stdout + made.stderr
        assert "integrity: ok" in made.stdout
        with fresh_database(database_url, tmp_path) as fresh_url:
            fresh_env = procs.app_env(
                fresh_url, server.url, tmp_path / "fresh-instance", WORKFLOW_MODULES=MODULE
            )
            refused = procs.flask(fresh_env, "backup", "restore", "--yes", str(backup), timeout=180)
            assert refused.returncode != 0
            assert "refusing to restore while the product runs" in refused.stderr
            assert "worker" in refused.stderr
            worker.stop()
            scheduler.stop()
            time.sleep(2.5)  # a worker's liveness key lapses within 2 s
            live = events_of(database_url)

            restored = procs.flask(
                fresh_env, "backup", "restore", "--yes", str(backup), timeout=180
            )
            assert restored.returncode == 0, restored.stdout + restored.stderr
            assert "contents: as in the backup" in restored.stdout
            assert "projections: at head" in restored.stdout or (
                backend == "postgresql" and "projections: behind a hole" in restored.stdout
            )

            # every committed event, each at its stream and version (the backup's
            # events: the start-up checks ran the projections, which append more)
            head = json.loads((backup / "manifest.json").read_text())["contents"]["head_position"]
            got = events_of(fresh_url, upto=head)
            assert set(before) <= set(got), "events committed before the backup are missing"
            assert all(got[i] == live[i] for i in got), "an event moved or changed"
            versions: dict[tuple[str, str], list[int]] = {}
            for agg_type, agg_id, version in got.values():
                versions.setdefault((agg_type, agg_id), []).append(version)
            assert all(sorted(v) == list(range(1, len(v) + 1)) for v in versions.values())

            # the outbox as the backup has it: who got their mail already
            outbox = query(
                fresh_url,
                "SELECT u.email, m.status FROM mail_outbox m JOIN users u ON u.id = m.user_id",
            )
            sent_before = {row.email for row in outbox if row.status == "sent"}
            pending = {row.email for row in outbox if row.status == "pending"}
            assert sent_before and len(outbox) >= 3

            orders = {
                row.aggregate_id
                for row in query(
                    fresh_url, "SELECT aggregate_id FROM events WHERE type = 'bk.placed'"
                )
            }
            paid = {
                row.aggregate_id
                for row in query(
                    fresh_url, "SELECT aggregate_id FROM events WHERE type = 'bk.paid'"
                )
            }
            worker = procs.worker(fresh_env, tmp_path / "worker2.log")
            scheduler = procs.scheduler(fresh_env, tmp_path / "scheduler2.log")
            with db.engine_restored():  # this process's engine stays on the test's database
                mine = create_app(make_config(database_url=fresh_url, redis_url=server.url))
                with mine.app_context():
                    for order in sorted(orders - paid):
                        publish("bk.paid", "payment", order, {"order": order})

            def settled() -> bool:
                per_order, status = runs_per_order(fresh_url)
                return set(per_order) == orders and status["completed"] == len(orders)

            try:
                procs.until(settled, timeout=180, what="every restored order completes")
            except AssertionError as exc:
                cursors = query(fresh_url, "SELECT name, position FROM projection_cursors")
                heads = query(fresh_url, "SELECT max(position), count(*) FROM events")
                raise AssertionError(
                    f"{exc}: runs {runs_per_order(fresh_url)[1]}, cursors {cursors}, "
                    f"events {heads}\n{worker.output()[-3000:]}"
                ) from None
            per_order, _status = runs_per_order(fresh_url)
            assert max(per_order.values()) == 1, "an order has two runs"
            sent_after = procs.until(
                lambda: (
                    (m := mails_to(tmp_path / "fresh-instance" / "mail"))
                    and set(m) >= pending
                    and m
                ),
                what="pending mails sent after the restore",
            )
            assert not (set(sent_after) & sent_before), "a mail marked sent was sent again"
            assert all(n == 1 for n in sent_after.values()), sent_after
            worker.stop()
            scheduler.stop()
            assert "Traceback" not in worker.output(), worker.output()[-3000:]
    finally:
        worker.stop()
        scheduler.stop()


def test_a_damaged_backup_is_refused_and_nothing_is_touched(app, runner, tmp_path):
    """`verify` names the damage; `restore` refuses before touching anything."""
    backup = tmp_path / "b"
    made = runner.invoke(args=["backup", "create", str(backup)])
    assert made.exit_code == 0, made.output
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["secret_key"]["fingerprint"]
    assert oct((backup / "manifest.json").stat().st_mode & 0o777) == "0o600"
    assert oct(backup.stat().st_mode & 0o777) == "0o700"
    again = runner.invoke(args=["backup", "create", str(backup)])
    assert again.exit_code != 0 and "exists" in again.output
    database = backup / manifest["database"]
    with database.open("r+b") as fh:
        fh.seek(database.stat().st_size // 2)
        fh.write(b"\xff" * 64)
    checked = runner.invoke(args=["backup", "verify", str(backup)])
    assert checked.exit_code != 0
    assert f"{manifest['database']}: changed" in checked.output
    refused = runner.invoke(args=["backup", "restore", "--yes", str(backup)])
    assert refused.exit_code != 0 and "damaged" in refused.output
    nothing = runner.invoke(args=["backup", "verify", str(tmp_path / "nowhere")])
    assert nothing.exit_code != 0 and "not a folder" in nothing.output


def test_a_process_holding_the_sqlite_file_is_named(tmp_path):
    """A web process (or any other) with the file open keeps a restore away,
    though it keeps no key in Redis."""
    path = tmp_path / "held.db"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sqlite3, time; c = sqlite3.connect({str(path)!r}); time.sleep(60)",
        ]
    )
    try:
        found = procs.until(lambda: running.holding_file(path), timeout=30, what="held")
        assert found == [f"process {holder.pid} ({found[0].split('(', 1)[1][:-1]})"]
        assert "sqlite3" in found[0]
    finally:
        holder.kill()
        holder.wait()
    assert running.holding_file(path) == []
