"""Which modules one resume passes through: a run waits for an event, the
event arrives, and the resume is traced from `resume.resume_many` (the
entry every resume takes: the resume loop, the resume-run job, the drain) to
its return, which is after the run's next commit.

    python tools/resume_path.py            # the counts
    python tools/resume_path.py --trace    # and the module of every call, in order

Counts the modules of `webapp.workflows` the resume enters (`visited`) and how
often it comes back into a module it had left (`returns`); the same for every
module of `webapp` beside them; and the engine's count once more without the
definition package and generated methods (`__init__`, `__eq__` ...): reading a
workflow's definition or building a value is not following the control flow. Runs on the test harness (SQLite in a temporary
folder, no Redis), so it needs nothing running.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import webapp.workflows as wf  # noqa: E402
from webapp.workflows.engine import resume  # noqa: E402
from webapp.workflows.testing import WorkflowTest  # noqa: E402

FLOW = wf.workflow(
    "resume-path",
    on="path.started",
    awaits={"answer": "path.answered"},
    steps=[
        wf.compute("before", lambda ctx: 1),
        wf.wait_for_event(
            "answer",
            event="answer",
            timeout="PT1H",
            match=lambda ctx: wf.match.eq("ref", ctx.trigger.aggregate_id),
        ),
        wf.compute("after", lambda ctx: 2),
        wf.ret(lambda ctx: ctx["after"]),
    ],
)


def counts(modules: list[str]) -> tuple[int, int]:
    """(distinct modules, returns into a module already left) of a sequence of
    the modules each call ran in."""
    seen: set[str] = set()
    returns = 0
    previous = None
    for m in modules:
        if m != previous:
            if m in seen:
                returns += 1
            seen.add(m)
            previous = m
    return len(seen), returns


def trace(fn: Callable[[], Any], prefix: str) -> list[tuple[str, str]]:
    """(module, function) of every Python call while `fn` runs, for the
    modules under `prefix`."""
    calls: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith(prefix):
                calls.append((name, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def main() -> None:
    traced: dict[str, list[tuple[str, str]]] = {}
    original = resume.resume_many

    def resume_many(*args: Any, **kwargs: Any) -> Any:
        out: Any = None

        def go() -> None:
            nonlocal out
            out = original(*args, **kwargs)

        if not traced:
            traced["webapp"] = trace(go, "webapp.")
        else:
            go()
        return out

    resume.resume_many = resume_many  # type: ignore[assignment]
    with WorkflowTest(FLOW) as t:
        t.publish("path.started", "thing/p1")
        t.publish("path.answered", "answer/a1", {"ref": "p1"})
        (run,) = t.runs()
        assert run.status == "completed", run.status
    calls = [m for m, _ in traced["webapp"]]
    functions = [f for _, f in traced["webapp"]]
    engine = [m for m in calls if m.startswith("webapp.workflows.")]
    v, r = counts(engine)
    print(f"webapp.workflows: {v} modules visited, {r} returns to a module already left")
    v_all, r_all = counts(calls)
    print(f"all of webapp:    {v_all} modules visited, {r_all} returns to a module already left")
    flow = [
        m
        for m, fn in zip(calls, functions, strict=True)
        if m.startswith("webapp.workflows.")
        and not m.startswith("webapp.workflows.definition.")
        and not fn.startswith("__")
    ]
    v_flow, r_flow = counts(flow)
    print(
        f"control flow:     {v_flow} modules visited, {r_flow} returns to a module already left"
        " (webapp.workflows without its definitions and generated methods)"
    )
    if "--trace" in sys.argv:
        previous = None
        for m in calls:
            if m != previous:
                print("  ", m)
                previous = m


if __name__ == "__main__":
    main()
