"""`make run` (worker/dev.py): a child that exits unexpectedly is started again
with backoff instead of stopping everything; Ctrl-C (or SIGTERM) stops every
process it started, gunicorn's workers included, within 10 s, also with
requests in flight, and the next `make run` serves."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
from redis import Redis
from rq import Queue

from tests import procs
from worker import dev

STOP_WITHIN_S = 10.0  # the contract


def test_child_is_restarted_with_growing_backoff_reset_when_stable():
    starts: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        p = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        starts.append(p)
        return p

    child = dev.Child("crashy", start)
    child.start()
    starts[-1].wait()
    t0 = child.started_at
    child.watch(t0 + 0.1)  # noticed: restart scheduled after 1 s
    assert child.restart_at == t0 + 0.1 + dev.FIRST_BACKOFF_S and len(starts) == 1
    child.watch(t0 + 0.5)  # not yet
    assert len(starts) == 1
    child.watch(t0 + 1.2)  # due: started again
    assert len(starts) == 2
    starts[-1].wait()
    child.watch(child.started_at + 0.1)
    assert child.restart_at == child.started_at + 0.1 + 2 * dev.FIRST_BACKOFF_S  # doubled
    child.watch(child.restart_at)
    starts[-1].wait()
    # it had run long enough: 1 s again. Half a second past the mark, not on
    # it: (t + 60.0) - t can round to 59.999... for some monotonic readings t
    noticed = child.started_at + dev.STABLE_AFTER_S + 0.5
    child.watch(noticed)
    assert child.restart_at == noticed + dev.FIRST_BACKOFF_S


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dev_env(tmp_path: Path, port: int, web_workers: int = 1) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env.update(
        INSTANCE_PATH=str(tmp_path / "i"),  # embedded Redis on a short socket path
        # its own metrics directory: `make run` starts by clearing the one it
        # uses, which must not be the test session's (later tests count in it)
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'dev.db'}",
        PORT=str(port),
        WEB_CONCURRENCY=str(web_workers),
        SECRET_KEY="dev-supervisor-secret-0123456789",
        LOG_LEVEL="WARNING",
    )
    return env


def test_make_run_restarts_a_killed_worker_and_stops_cleanly(tmp_path):
    env = _dev_env(tmp_path, _free_port())
    run = procs.Proc([sys.executable, "-m", "worker.dev"], env, tmp_path / "dev.log")
    try:
        procs.until(lambda: "Ready:" in run.output(), timeout=90, what="make run ready")
        assert _get(int(env["PORT"])) == 200  # "Ready" means the web answers
        pid_of = re.compile(r"worker\s+\| started \(pid (\d+)\)")
        first = int(procs.until(lambda: pid_of.findall(run.output()), what="worker pid")[0])
        os.kill(first, signal.SIGKILL)
        procs.until(
            lambda: "worker   | exited with -9; restarting" in run.output(), what="exit seen"
        )
        second = procs.until(
            lambda: [int(p) for p in pid_of.findall(run.output()) if int(p) != first],
            what="worker started again",
        )[0]
        assert run.alive()
        pids = [int(p) for p in re.findall(r"\| started \(pid (\d+)\)", run.output())]
        run.popen.send_signal(signal.SIGTERM)
        assert run.popen.wait(30) == 0
        for pid in [*pids, second]:
            procs.until(lambda pid=pid: not _running(pid), timeout=15, what=f"pid {pid} gone")
    finally:
        run.stop()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie of an already-exited child counts as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _get(port: int, path: str = "/healthz") -> int:
    """The status of one request (0: no answer)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            head = s.recv(64).decode(errors="replace")
    except OSError:
        return 0
    m = re.match(r"HTTP/1\.[01] (\d{3})", head)
    return int(m.group(1)) if m else 0


@contextlib.contextmanager
def requests_in_flight(port: int, clients: int = 4) -> Iterator[list[int]]:
    """Clients that send requests one after the other until the block ends, and
    one that sends half a request and never the rest (a web worker thread waits
    for it). Yields the list of answered statuses, growing."""
    answered: list[int] = []
    done = threading.Event()

    def hammer() -> None:
        while not done.is_set():
            if (status := _get(port)) == 0:
                done.wait(0.05)
            else:
                answered.append(status)

    half = socket.create_connection(("127.0.0.1", port), timeout=5)
    half.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
    threads = [threading.Thread(target=hammer) for _ in range(clients)]
    for t in threads:
        t.start()
    try:
        yield answered
    finally:
        done.set()
        for t in threads:
            t.join()
        half.close()


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _alive(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE  # an orphan's zombie holds nothing
    except psutil.NoSuchProcess:
        return False


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _start(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`make run` as a terminal runs it: its own process group, the one Ctrl-C signals."""
    with open(log, "ab") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "worker.dev"],
            cwd=procs.ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_ctrl_c_with_requests_in_flight_stops_every_process_and_the_next_run_serves(tmp_path):
    port = _free_port()
    env = _dev_env(tmp_path, port, web_workers=2)
    for attempt in ("first", "second"):
        log = tmp_path / f"{attempt}.log"
        run = _start(env, log)
        try:
            procs.until(lambda: _get(port) == 200, timeout=90, what=f"{attempt} make run serves")
            with requests_in_flight(port) as answered:
                procs.until(lambda: len(answered) >= 20, what="requests answered")
                tree = _tree(run.pid)
                gunicorns = [p for p in tree if "gunicorn" in " ".join(p.cmdline())]
                assert len(gunicorns) == 3, tree  # the master and its two workers
                t0 = time.monotonic()
                os.killpg(run.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the group
                with contextlib.suppress(subprocess.TimeoutExpired):
                    run.wait(STOP_WITHIN_S)
                left = [p for p in tree if _alive(p)]
                stop_s = time.monotonic() - t0
            assert left == [], (
                f"{left} still running {stop_s:.1f} s after Ctrl-C\n{log.read_text()}"
            )
            assert run.returncode == 0, log.read_text()
            print(f"{attempt} make run: every process gone {stop_s:.1f} s after Ctrl-C")
            assert _port_free(port)
            assert _get(port) == 0
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait()


def test_a_web_master_that_dies_takes_its_workers_with_it_and_the_next_one_serves(tmp_path):
    """A gunicorn worker whose master was killed must not keep the port: one
    with a request in flight (half sent) would hold it until that request ends."""
    port = _free_port()
    run = _start(_dev_env(tmp_path, port), tmp_path / "dev.log")
    try:
        procs.until(lambda: _get(port) == 200, timeout=90, what="make run serves")
        master = next(p for p in _tree(run.pid) if "gunicorn" in " ".join(p.cmdline()))
        workers = master.children()
        assert workers
        with requests_in_flight(port, clients=1):
            os.kill(master.pid, signal.SIGKILL)
            procs.until(
                lambda: (
                    "web      | exited with -9; restarting" in (tmp_path / "dev.log").read_text()
                ),
                what="exit seen",
            )
            procs.until(lambda: not any(_alive(w) for w in workers), what="old workers gone")
            procs.until(lambda: _get(port) == 200, timeout=60, what="the next master serves")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGTERM)
        run.wait(STOP_WITHIN_S)


# A web process as the supervisor sees it: it exits at its first start (the
# supervisor must start it again while it waits), then listens after a delay and
# answers /healthz 503 a few times before 200. Each request is written to its log
# before it is answered.
SLOW_WEB = r"""
import sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

port, log, crashed = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
if not crashed.exists():
    crashed.touch()
    sys.exit(3)
time.sleep(1.0)
unhealthy = [3]

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        status = 200
        if self.path == "/healthz" and unhealthy[0] > 0:
            unhealthy[0] -= 1
            status = 503
        with log.open("a") as fh:
            fh.write(f"GET {self.path} {status} {self.headers.get('User-Agent')}\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def test_ready_is_printed_after_the_first_healthy_answer_and_the_first_pages(tmp_path):
    port = _free_port()
    log, crashed = tmp_path / "requests.log", tmp_path / "crashed"
    log.touch()

    def start() -> subprocess.Popen[bytes]:
        args = [sys.executable, "-c", SLOW_WEB, str(port), str(log), str(crashed)]
        return subprocess.Popen(args, start_new_session=True)

    web = dev.Child("web", start)
    web.start()
    printed: list[tuple[str, list[str]]] = []  # what was printed, and what had been served then
    try:
        ready = dev.announce_ready(
            ("127.0.0.1", port),
            "http://localhost:1234",
            [web],
            threading.Event(),
            out=lambda text: printed.append((text, log.read_text().splitlines())),
        )
        assert ready
        [(text, served)] = printed
        assert text.strip() == "Ready: http://localhost:1234/   (Ctrl-C stops everything)"
        assert crashed.exists() and web.proc is not None and web.proc.poll() is None  # restarted
        # Asked again and again until the first 200; then the first pages, and only then Ready.
        assert served == [
            *["GET /healthz 503 make-run"] * 3,
            "GET /healthz 200 make-run",
            "GET / 200 make-run",
            "GET /login 200 make-run",
        ]
    finally:
        web.kill()
        assert web.proc is not None
        web.proc.wait()


def test_ready_is_not_printed_when_stopped_before_the_web_answers(tmp_path):
    never = dev.Child(
        "web",
        lambda: subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
        ),
    )
    never.start()
    stopping = threading.Event()
    threading.Timer(1.0, stopping.set).start()
    printed: list[str] = []
    try:
        assert not dev.announce_ready(
            ("127.0.0.1", _free_port()), "http://x", [never], stopping, out=printed.append
        )
        assert printed == []
    finally:
        never.kill()
        assert never.proc is not None
        never.proc.wait()


def _health(port: int) -> int:
    return _get(port, "/healthz")


def test_an_idle_make_run_prints_nothing_yet_restarts_and_errors_still_show(tmp_path):
    """After its start-up lines an idle `make run` (LOG_LEVEL's default, INFO)
    says nothing: no line per health probe, none of RQ's per-job lines for the
    sweeps of the scheduler (one every 15 s). A child's restart and a failed
    job still show, and every line is under a prefix of the same width."""
    port = _free_port()
    env = _dev_env(tmp_path, port)
    env.pop("LOG_LEVEL")
    run = procs.Proc([sys.executable, "-m", "worker.dev"], env, tmp_path / "dev.log")
    try:
        procs.until(lambda: "Ready:" in run.output(), timeout=90, what="make run ready")
        # start-up ends when both loops turn (their health ports answer 200) and
        # the scheduler has written its schedule
        procs.until(lambda: _health(port + 1) == _health(port + 2) == 200, what="loops turning")
        procs.until(lambda: "schedule synced" in run.output(), what="schedule synced")
        time.sleep(1.0)
        before = run.output()
        time.sleep(20.0)  # a sweep job (every 15 s) and four health probes (every 5 s)
        assert run.output()[len(before) :] == ""

        with Redis(unix_socket_path=str(tmp_path / "i" / "redis.sock")) as r:
            Queue("default", connection=r).enqueue("builtins.int", "not a number")
        procs.until(lambda: "exception raised while executing (builtins.int)" in run.output())
        worker_pid = int(re.findall(r"worker   \| started \(pid (\d+)\)", run.output())[0])
        os.kill(worker_pid, signal.SIGKILL)
        procs.until(lambda: "worker   | exited with -9; restarting" in run.output())
    finally:
        run.stop()
    prefixed = re.compile(r"(redis|database|web|worker|scheduler) *\| ")
    lines = [ln for ln in run.output().splitlines() if ln.strip() and "Ready:" not in ln]
    assert [ln for ln in lines if not (prefixed.match(ln) and ln.index("|") == 9)] == []
