"""Every curl example of docs/api.md runs here with the real curl, against
the app served over HTTP on a free port, with the variables the page tells
the reader to set (`API`, `TOKEN`, and `RUN_ID` of a run the action applies
to). Each must succeed (`--fail-with-body`: an error answer fails it) and
answer JSON. While curl runs, this thread works the job queue as a worker
would, so an update's request gets the run's answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from werkzeug.serving import make_server

import webapp.workflows as wf
from tests.support.workflows import emit, runs
from tests.test_docs_examples import blocks
from webapp.core.config import ROOT

DOC = ROOT / "docs" / "api.md"
FLAKY = {"broken": True}


def judge(results: Any, payload: Any) -> Any:
    return {"approved": payload["amount"]}


def flaky(_ctx: Any) -> int:
    if FLAKY["broken"]:
        raise RuntimeError("down")
    return 1


@pytest.fixture
def served(app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


def curl_blocks() -> list[Any]:
    return [b for b in blocks(DOC) if b.info == "sh" and "$API/api/v1/" in b.code]


def test_the_curl_examples_run_against_a_live_server(
    served: str, token: Any, use_workflow: Any, work: Any
) -> None:
    assert shutil.which("curl"), "curl is needed (apt-get install curl)"
    use_workflow(
        wf.workflow(
            "order-follow-up", on="order.placed", steps=[wf.wait("cool-off", "PT1H"), wf.ret(1)]
        )
    )
    use_workflow(
        wf.workflow("charge", on="charge.requested", steps=[wf.compute("c", flaky), wf.ret(2)])
    )
    use_workflow(
        wf.workflow(
            "order-approval",
            on="approval.requested",
            steps=[
                wf.set_state("mark", "stage", "waiting for approval"),
                wf.wait_for_signal("approved", timeout="P2D", signal="approve"),
                wf.wait_for_update("amount", handler=judge, timeout="P1D"),
                wf.ret(lambda ctx: ctx["amount"]),
            ],
        )
    )
    FLAKY["broken"] = True
    emit("approval.requested", {})
    emit("charge.requested", {})
    work()
    failed = runs("charge")[0].run_id
    FLAKY["broken"] = False
    secret = token()
    examples = curl_blocks()
    assert len(examples) >= 10
    for b in examples:
        work()  # the runs of the events published so far start
        talking = "/signal" in b.code or "/update" in b.code
        flow = "order-approval" if talking else "order-follow-up"
        waiting = [r.run_id for r in runs(flow) if r.status == "suspended"]
        run_id = failed if ("/retry" in b.code or "/rerun" in b.code) else (waiting or [""])[0]
        env = {**os.environ, "API": served, "TOKEN": secret, "RUN_ID": run_id}
        curl = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", b.code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while curl.poll() is None and time.monotonic() < deadline:
            work()  # as a worker would, while curl waits (an update's answer)
            time.sleep(0.05)
        if curl.poll() is None:
            curl.kill()  # still waiting after a minute: fails below
        stdout, stderr = curl.communicate()
        where = f"docs/api.md:{b.line}"
        assert curl.returncode == 0, f"{where}: {stdout}{stderr}"
        answers = [json.loads(a) for a in filter(None, stdout.replace("}{", "}\n{").splitlines())]
        assert answers, f"{where}: no answer"
        if "/update" in b.code:  # the run was waiting for it, and the worker answered
            assert answers[0]["outcome"] == "accepted", f"{where}: {answers[0]}"
            assert answers[0]["value"] == {"approved": 40}
