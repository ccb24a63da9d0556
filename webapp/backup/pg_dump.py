"""PostgreSQL: `pg_dump` in its custom format, its check, and its restore.

The dump and the manifest's figures come from one snapshot: a REPEATABLE
READ transaction exports its snapshot, `pg_dump --snapshot` dumps exactly
what that transaction sees, and `contents.summary` counts in it. Web, worker
and scheduler go on writing meanwhile. `pg_dump` and `pg_restore` are the
server's own tools (Debian: postgresql-client); their major version must be
at least the server's.

Restoring is one transaction: the public schema is dropped and created again
and the dump's statements (from `pg_restore --file=-`) run after it in
`psql --single-transaction`, so a failed restore leaves the database as it
was. Point-in-time recovery (WAL archiving) is the server's business and
goes beyond this: docs/operations.md, "Backup and restore".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from webapp.backup import contents
from webapp.backup.archive import BackupError

TOOLS = ("pg_dump", "pg_restore", "psql")


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise BackupError(
            f"{name} not found: install PostgreSQL's client tools "
            "(Debian/Ubuntu: apt install postgresql-client)"
        )
    return found


def connection(url: str) -> tuple[str, dict[str, str]]:
    """libpq's URL for `url` without the password, and an environment that
    carries it (PGPASSWORD): a password never shows in a process list."""
    u = make_url(url)
    env = dict(os.environ)
    if u.password:
        env["PGPASSWORD"] = str(u.password)
    plain = u.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def _run(args: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise BackupError(f"{what} failed: {done.stderr.strip()[-2000:]}")


def dump(url: str, target: Path) -> dict[str, Any]:
    """Dump the database into `target`; returns its figures, counted in the
    snapshot the dump was taken from."""
    dsn, env = connection(url)
    engine = create_engine(url, poolclass=NullPool, isolation_level="REPEATABLE READ")
    try:
        with engine.connect() as conn:
            conn.execute(text("SET TRANSACTION READ ONLY"))
            snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
            _run(
                [
                    _tool("pg_dump"),
                    "--format=custom",
                    "--no-owner",
                    "--no-privileges",
                    f"--snapshot={snapshot}",
                    f"--file={target}",
                    f"--dbname={dsn}",
                ],
                env,
                "pg_dump",
            )
            figures = contents.summary(conn)
            conn.rollback()
    finally:
        engine.dispose()
    target.chmod(0o600)
    return figures


def check(dump_file: Path) -> list[str]:
    """Read the whole dump back (its table of contents and every data block):
    what is wrong with it (empty: ok)."""
    env = dict(os.environ)
    for args in (["--list", str(dump_file)], ["--file=/dev/null", str(dump_file)]):
        done = subprocess.run([_tool("pg_restore"), *args], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return [f"pg_restore cannot read it: {done.stderr.strip()[-1000:]}"]
    return []


def safety_copy(url: str, target: Path) -> None:
    """The database as it is now, before a restore replaces it."""
    dsn, env = connection(url)
    _run(
        [_tool("pg_dump"), "--format=custom", f"--file={target}", f"--dbname={dsn}"],
        env,
        "pg_dump (the copy of the database before the restore)",
    )
    target.chmod(0o600)


def restore(url: str, dump_file: Path) -> None:
    """Replace the database's public schema by the dump's, in one transaction."""
    dsn, env = connection(url)
    script = subprocess.Popen(
        [_tool("pg_restore"), "--no-owner", "--no-privileges", "--file=-", str(dump_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    psql = subprocess.Popen(
        [_tool("psql"), "--quiet", "--no-psqlrc", "--single-transaction",
         "--set=ON_ERROR_STOP=1", "--file=-", f"--dbname={dsn}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )  # fmt: skip
    assert script.stdout is not None and psql.stdin is not None
    psql.stdin.write(b"DROP SCHEMA public CASCADE;\nCREATE SCHEMA public;\n")
    shutil.copyfileobj(script.stdout, psql.stdin, 1 << 20)
    psql.stdin.close()
    script_err = script.stderr.read().decode() if script.stderr else ""
    psql_err = psql.stderr.read().decode() if psql.stderr else ""
    if script.wait() != 0:
        psql.kill()
        psql.wait()
        raise BackupError(f"pg_restore failed: {script_err.strip()[-2000:]}")
    if psql.wait() != 0:
        raise BackupError(
            f"the restore was rolled back, the database is as it was: {psql_err.strip()[-2000:]}"
        )


def other_sessions(url: str) -> list[str]:
    """Sessions connected to this database besides the asking one."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT pid, coalesce(application_name, ''), coalesce(client_addr::text, 'local') "
                    "FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                )
            ).all()
    finally:
        engine.dispose()
    return [f"session {pid} ({name or 'no name'}, from {addr})" for pid, name, addr in rows]
