"""DBOS's side of `make bench-anchors`: run by bench/.venv-dbos/bin/python, prints JSON.

    bench/.venv-dbos/bin/python bench/anchors_dbos.py          # the measurement
    bench/.venv-dbos/bin/python bench/anchors_dbos.py worker   # one DBOS worker process

The measurement drops and recreates ANCHORS_DBOS_DATABASE_URL's database (a
scratch one), lets DBOS migrate it, starts ANCHORS_WORKERS DBOS processes
(`worker`) that listen on one queue, and, from this process, through a
DBOSClient (the way another service starts DBOS workflows):

- enqueues ANCHORS_RUNS workflows, 100 per transaction (as our bench appends
  its triggers), of each of two variants of our 3-step workflow, and times
  first enqueue -> all SUCCESS:
  `step_sleep0`: @DBOS.step compute -> DBOS.sleep(0) -> return (the literal
  translation; DBOS.sleep(0) returns at once and records nothing), and
  `three_steps`: three @DBOS.step calls (compute -> a no-op step -> a step
  returning the value; each checkpointed, as our wait 0 records its
  step.waiting / step.resumed);
- enqueues ANCHORS_RESUMES workflows that block in DBOS.recv, waits until they
  all wait, then sends one message to each, 50 ms apart; the latency is the
  time before DBOSClient.send is called -> the time right after DBOS.recv
  returned in the workflow (same machine, same clock).

Nothing here imports the product: this file runs in DBOS's own venv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib.metadata import version
from typing import Any

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, DBOSConfig

URL = os.environ.get(
    "ANCHORS_DBOS_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/bench_anchors_dbos"
)
WORKERS = int(os.environ.get("ANCHORS_WORKERS", "2"))
RUNS = int(os.environ.get("ANCHORS_RUNS", "300"))
RESUMES = int(os.environ.get("ANCHORS_RESUMES", "60"))
# DBOS's default queue poll is 1 s, which would add up to a second to a 2 s
# measurement; 10 ms is what a latency-minded DBOS user would set.
POLL_S = float(os.environ.get("ANCHORS_DBOS_POLL_S", "0.01"))
QUEUE = "bench_anchors"
APP = "bench-anchors"


# -- the workflows (every process registers them; the workers run them) -----------
@DBOS.step()
def compute(i: int) -> int:
    return i + 1


@DBOS.step()
def zero_step() -> None:
    """Nothing to do: stands for our `wait 0`, checkpointed."""


@DBOS.step()
def return_step(x: int) -> int:
    return x


@DBOS.workflow()
def step_sleep0(i: int) -> int:
    x = compute(i)
    DBOS.sleep(0)
    return x


@DBOS.workflow()
def three_steps(i: int) -> int:
    x = compute(i)
    zero_step()
    return return_step(x)


@DBOS.workflow()
def await_ping(i: int) -> float:
    DBOS.recv("ping", timeout_seconds=600)
    return time.time()


def config() -> DBOSConfig:
    return {
        "name": APP,
        "executor_id": f"bench-anchors-{os.getpid()}",
        "system_database_url": URL,
        "log_level": "WARNING",
        "application_version": "bench-anchors-1",
    }


def worker() -> None:
    """One DBOS executor: dequeue and run until stdin closes."""
    DBOS(config=config())
    DBOS.listen_queues([QUEUE])
    DBOS.launch()
    DBOS.register_queue(QUEUE, polling_interval_sec=POLL_S, on_conflict="always_update")
    time.sleep(1.5)  # the queue thread looks for new queues once a second
    print("ready", flush=True)
    sys.stdin.read()
    DBOS.destroy()


# -- the measurement ----------------------------------------------------------------
def recreate_database() -> None:
    url = sa.make_url(URL).set(drivername="postgresql+psycopg")
    admin = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
        conn.execute(sa.text(f'CREATE DATABASE "{url.database}"'))
    admin.dispose()
    DBOS.migrate(URL)


def start_workers() -> list[subprocess.Popen[str]]:
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    for p in procs:
        assert p.stdout is not None
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError("a DBOS worker did not start")
    return procs


def stop_workers(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        assert p.stdin is not None
        p.stdin.close()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


class Measure:
    def __init__(self) -> None:
        self.client = DBOSClient(system_database_url=URL, application_name=APP)
        url = sa.make_url(URL).set(drivername="postgresql+psycopg")
        self.engine = sa.create_engine(url)

    def count(self, name: str, status: str) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    sa.text(
                        "SELECT count(*) FROM dbos.workflow_status WHERE name = :n AND status = :s"
                    ),
                    {"n": name, "s": status},
                ).scalar_one()
            )

    def until(self, pred: Any, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline:
                raise TimeoutError("DBOS bench step did not finish in time")
            time.sleep(0.05)

    def enqueue(self, name: str, args: list[int]) -> list[str]:
        ids = []
        with self.engine.begin() as conn:
            for i in args:
                handle = self.client.enqueue_in_transaction(
                    conn,
                    {"workflow_name": name, "queue_name": QUEUE, "app_version": "bench-anchors-1"},
                    i,
                )
                ids.append(handle.get_workflow_id())
        return ids

    def runs_per_s(self, name: str) -> float:
        t0 = time.perf_counter()
        for start in range(0, RUNS, 100):
            self.enqueue(name, list(range(start, min(RUNS, start + 100))))
        self.until(lambda: self.count(name, "SUCCESS") >= RUNS)
        return RUNS / (time.perf_counter() - t0)

    def send_recv_ms(self) -> list[float]:
        ids = self.enqueue("await_ping", list(range(RESUMES)))
        self.until(lambda: self.count("await_ping", "PENDING") >= RESUMES)
        time.sleep(1.0)  # PENDING is set before the workflow reaches recv
        sent: dict[str, float] = {}
        for wid in ids:
            sent[wid] = time.time()
            self.client.send(wid, "go", "ping")
            time.sleep(0.05)
        out = []
        for wid in ids:
            returned = self.client.retrieve_workflow(wid).get_result(polling_interval_sec=0.05)
            out.append((float(returned) - sent[wid]) * 1000)
        return out

    def close(self) -> None:
        self.client.destroy()
        self.engine.dispose()


def main() -> None:
    recreate_database()
    procs = start_workers()
    try:
        m = Measure()
        step_sleep0_s = m.runs_per_s("step_sleep0")
        three_steps_s = m.runs_per_s("three_steps")
        latency = m.send_recv_ms()
        m.close()
    finally:
        stop_workers(procs)
    print(
        json.dumps(
            {
                "dbos_version": version("dbos"),
                "workers": WORKERS,
                "runs": RUNS,
                "queue_polling_interval_s": POLL_S,
                "runs_per_s": {
                    "step_sleep0": round(step_sleep0_s, 1),
                    "three_steps": round(three_steps_s, 1),
                },
                "send_recv_ms": latency,
            }
        )
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["worker"]:
        worker()
    else:
        main()
