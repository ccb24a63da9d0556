"""What `PRAGMA secure_delete=ON` (every SQLite connection since issue 21,
point 7) costs: `python -m bench.secure_delete`.

The workload is the engine's most delete-heavy shape: a transaction inserts a
pending-wait row of ~300 bytes, and a later one deletes it (a resumed wait). Two
files with the product's pragmas, one with secure_delete on and one off, run
in alternating rounds in the same process, so machine noise hits both alike;
the figure is the median of the per-round ratios on/off (1.0 = free).
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import write_result

ROUNDS = 7
ROWS = 3000
RESULT = Path(__file__).resolve().parent / "results" / "secure_delete.json"


def _open(path: Path, secure: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute(f"PRAGMA secure_delete={'ON' if secure else 'OFF'}")
    conn.execute("CREATE TABLE IF NOT EXISTS pending (id INTEGER PRIMARY KEY, run TEXT, body TEXT)")
    conn.execute("CREATE INDEX IF NOT EXISTS pending_run ON pending (run)")
    return conn


def _round(conn: sqlite3.Connection) -> float:
    body = "x" * 300
    started = time.perf_counter()
    for i in range(ROWS):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO pending (run, body) VALUES (?, ?)", (f"run-{i}", body))
        conn.execute("COMMIT")
    for i in range(ROWS):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM pending WHERE run = ?", (f"run-{i}",))
        conn.execute("COMMIT")
    return (2 * ROWS) / (time.perf_counter() - started)  # transactions per second


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        on = _open(Path(tmp) / "on.db", secure=True)
        off = _open(Path(tmp) / "off.db", secure=False)
        ratios, on_tps, off_tps = [], [], []
        for _ in range(ROUNDS):
            b, a = _round(off), _round(on)
            off_tps.append(b)
            on_tps.append(a)
            ratios.append(a / b)
        on.close()
        off.close()
    result = {
        "backend": "sqlite",
        "tx_per_s_secure_delete_on": round(statistics.median(on_tps)),
        "tx_per_s_secure_delete_off": round(statistics.median(off_tps)),
        "ratio_on_vs_off_median": round(statistics.median(ratios), 3),
        "ratio_min": round(min(ratios), 3),
        "ratio_max": round(max(ratios), 3),
    }
    for key, value in result.items():
        print(f"{key:32} {value}")
    write_result(RESULT, result)


if __name__ == "__main__":
    main()
