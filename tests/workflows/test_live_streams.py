"""A run's events as server-sent events (`GET /runs/<id>/events`), with a
real worker process emitting progress entries: a dropped connection resumes
from `Last-Event-ID` with no loss, no duplicate and in order; another user's
run is refused (404), as is one that does not exist."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import webapp.workflows as wf
from tests.procs import Proc, app_env, until, until_listening
from tests.support.workflows import emit, runs
from tests.workflows.messages_defs import ENTRIES, STREAMING
from webapp.eventstore import projections
from webapp.live import watch


def _messages(resp: Any) -> Iterator[dict[str, str]]:
    """The stream's messages as they come (id, event, data)."""
    buf = ""
    for chunk in resp.response:
        buf += chunk.decode() if isinstance(chunk, bytes) else chunk
        while "\n\n" in buf:
            block, buf = buf.split("\n\n", 1)
            msg: dict[str, str] = {}
            for line in block.splitlines():
                key, _, value = line.partition(": ")
                if key in ("id", "event"):
                    msg[key] = value
                elif key == "data":
                    msg["data"] = msg.get("data", "") + value
            if "event" in msg:
                yield msg


def _started_run(user: Any) -> Any:
    emit("messages.stream", {}, aggregate_id=str(user.id))
    projections.run_all()
    (run,) = runs(STREAMING.name)
    return run


def test_a_dropped_stream_resumes_from_last_event_id_without_loss_or_duplicates(
    app, client, user, plain, use_workflow, database_url, redis_url, redis, tmp_path
):
    use_workflow(STREAMING)
    run = _started_run(user)
    url = f"/runs/{run.run_id}/events"
    assert plain.get(url).status_code == 404  # another user's run
    assert client.get("/runs/00000000-0000-4000-8000-000000000000/events").status_code == 404
    assert client.get(url, headers={"Last-Event-ID": "x"}).status_code == 400
    env = app_env(database_url, redis_url, tmp_path / "instance")
    worker = Proc(
        [sys.executable, "-c", "from tests.workflows.messages_defs import main; main()"],
        env,
        tmp_path / "worker.log",
    )
    try:
        until_listening([worker], redis)
        until(lambda: runs(STREAMING.name)[0].status == "suspended", what="the run waits for go")
        first = client.get(url, buffered=False)
        assert first.status_code == 200 and first.mimetype == "text/event-stream"
        wf.signal(run.run_id, "go")
        seen: list[dict[str, str]] = []
        for msg in _messages(first):
            seen.append(msg)
            if sum(m["event"] == "progress" for m in seen) == 20:
                break
        first.close()  # the connection drops mid-run
        again = client.get(url, headers={"Last-Event-ID": seen[-1]["id"]}, buffered=False)
        for msg in _messages(again):
            seen.append(msg)
            if msg["event"] == "done":
                break
        again.close()
    finally:
        worker.stop()
    ids = [int(m["id"]) for m in seen if "id" in m]
    assert ids == sorted(set(ids)), "each event once, in order"
    assert ids == list(range(ids[0], ids[-1] + 1)), "no event lost"
    entries = [m["data"] for m in seen if m["event"] == "progress"]
    assert len(entries) == ENTRIES
    assert [f"entry {i}<" in e for i, e in enumerate(entries, 1)] == [True] * ENTRIES
    assert seen[-1] == {"event": "done", "data": "completed"}
    assert "workflow.run-completed" in [m["data"] for m in seen if m["event"] == "run"]


def test_a_process_serves_at_most_its_cap_of_open_streams(
    app, client, user, use_workflow, monkeypatch
):
    use_workflow(STREAMING)
    run = _started_run(user)
    monkeypatch.setattr(watch.settings, "max_streams", 1)
    url = f"/runs/{run.run_id}/events"
    first = client.get(url, buffered=False)
    assert first.status_code == 200
    assert next(iter(first.response)).startswith(b"retry:")  # open, waiting
    second = client.get(url)
    assert second.status_code == 503 and second.headers["Retry-After"] == "5"
    first.close()  # closing the first frees its place
    again = client.get(url, buffered=False)
    assert again.status_code == 200
    again.close()
    assert watch.open_count() == 0
