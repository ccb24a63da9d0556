"""Changing workflows with runs in flight: versions side by side, the deploy
check (`flask workflows check`), `versions`, and `migrate`."""

from __future__ import annotations

import json

import pytest

import webapp.workflows as wf
from tests.support.workflows import emit, pending, run_events, runs, types
from tests.workflows.versions_defs import v1, v2
from webapp.core import db
from webapp.workflows import versions
from webapp.workflows.dispatch import sweep
from webapp.workflows.store import run_events as ev


def orders(n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        emit("ver.ordered", {"n": i}, aggregate_id=f"o{i}")


def by_version(name: str = "ver-order") -> dict[int, list]:
    out: dict[int, list] = {}
    for r in runs(name):
        out.setdefault(r.definition_version, []).append(r)
    return out


def test_versions_run_side_by_side_each_on_its_own_definition(use_workflow, work):
    use_workflow(v1())
    orders(3)
    work()
    use_workflow(v1(start=False))  # v1 finishes what it started
    use_workflow(v2())
    orders(2, start=3)
    work()
    open_ = by_version()
    assert [len(open_[1]), len(open_[2])] == [3, 2]
    assert {r.status for r in runs("ver-order")} == {"suspended"}
    v2_run = open_[2][0]
    assert run_events(v2_run.run_id)[0].payload["definitionVersion"] == 2
    assert "definitionVersion" not in run_events(open_[1][0].run_id)[0].payload  # v1: as before

    emit("ver.shipped", {}, aggregate_id="ship")
    work()
    done = by_version()
    assert sorted(r.results["return"] for r in done[1]) == ["v1:0", "v1:1", "v1:2"]
    assert sorted(r.results["return"] for r in done[2]) == ["v2:3:30", "v2:4:40"]
    assert {r.status for r in runs("ver-order")} == {"completed"}


def test_new_triggers_start_the_highest_version_that_starts(use_workflow, work):
    use_workflow(v1())
    use_workflow(
        wf.workflow(
            "ver-order",
            on="ver.ordered",
            awaits={"shipped": "ver.shipped"},
            version=2,
            start=False,
            steps=[wf.ret("never")],
        )
    )
    orders(1)
    work()
    assert [r.definition_version for r in runs("ver-order")] == [1]


def test_a_run_whose_version_is_gone_fails_and_the_check_lists_it(use_workflow, work, runner):
    use_workflow(v1())
    orders(2)
    work()
    use_workflow(v2())
    wf.unregister("ver-order", 1)
    result = runner.invoke(args=["workflows", "check"])
    assert result.exit_code == 1, result.output
    assert "FAILS: ver-order v1: version 1 is not in the code; 2 open runs" in result.output
    assert "2 runs waiting at step 'shipped' (index 1): would fail" in result.output
    emit("ver.shipped", {}, aggregate_id="ship")
    work()
    assert {(r.status, r.reason) for r in by_version()[1]} == {
        ("failed", ev.REASON_DEFINITION_CHANGED)
    }


def test_versions_lists_code_and_open_runs(use_workflow, work, runner):
    use_workflow(v1())
    orders(2)
    work()
    use_workflow(v1(start=False))
    use_workflow(v2())
    lines = runner.invoke(args=["workflows", "versions"]).output.splitlines()
    rows = [line.split() for line in lines if line.startswith("ver-order")]
    assert rows == [["ver-order", "1", "yes", "finish", "2"], ["ver-order", "2", "yes", "yes", "0"]]
    wf.unregister("ver-order", 1)
    rows = [
        line.split()
        for line in runner.invoke(args=["workflows", "versions"]).output.splitlines()
        if line.startswith("ver-order")
    ]
    assert rows[0] == ["ver-order", "1", "no", "-", "2"]


# -- the deploy check on five kinds of change ---------------------------------------

WHO = wf.compute("who", lambda ctx: ctx.trigger.payload["to"])
PAUSE = wf.wait("pause", "PT1H")
DONE = wf.ret("done")


def reminder(*steps: object) -> wf.Workflow:
    return wf.workflow("ver-remind", on="ver.signed-up", steps=list(steps))  # type: ignore[arg-type]


def mail(subject: str) -> object:
    return wf.send_mail("remind", to=lambda ctx: ctx["who"], subject=subject, body="Please verify.")


def waiting_reminders(use_workflow, work, n: int = 3) -> None:
    use_workflow(reminder(WHO, PAUSE, mail("Plese verify"), DONE))
    for i in range(n):
        emit("ver.signed-up", {"to": f"u{i}@example.com"}, aggregate_id=f"u{i}")
    work()
    assert {r.status for r in runs("ver-remind")} == {"suspended"}


def check(runner) -> tuple[int, str, dict]:
    text = runner.invoke(args=["workflows", "check"])
    js = runner.invoke(args=["workflows", "check", "--json"])
    assert js.exit_code == text.exit_code
    return text.exit_code, text.output, json.loads(js.output)


def test_check_mail_text_fixed_after_the_wait_is_safe_and_the_runs_go_on(
    use_workflow, work, runner, clock, smtp
):
    waiting_reminders(use_workflow, work)
    assert check(runner)[0] == 0 and "ok: all 3 open runs" in check(runner)[1]
    use_workflow(reminder(WHO, PAUSE, mail("Please verify"), DONE))
    code, out, report = check(runner)
    assert code == 0, out
    assert "safe: ver-remind v1: definition changed; 3 open runs" in out
    assert "step 'remind' changed at index 2" in out
    assert "3 runs waiting at step 'pause' (index 1): go on" in out
    assert report["ok"] is True
    (finding,) = report["findings"]
    assert finding["changes"] == [{"change": "changed", "step": "remind", "index": 2}]
    assert finding["positions"] == [
        {"runs": 3, "status": "suspended", "stepIndex": 1, "step": "pause", "fails": False}
    ]
    clock.advance(3601)
    sweep.sweep("default")
    work()
    assert {r.status for r in runs("ver-remind")} == {"completed"}
    bodies = smtp.inbox.bodies()
    assert len(bodies) == 3 and all("Subject: Please verify" in b for b in bodies)
    a_run = runs("ver-remind")[0]
    assert types(a_run.run_id)[2] == "run-migrated"
    migrated = run_events(a_run.run_id)[2].payload
    assert migrated["automatic"] is True and (migrated["from"], migrated["to"]) == (1, 1)
    assert check(runner)[0] == 0


def test_check_step_added_at_the_end_is_safe(use_workflow, work, runner):
    waiting_reminders(use_workflow, work)
    use_workflow(reminder(WHO, PAUSE, mail("Plese verify"), wf.compute("log", lambda c: 1), DONE))
    code, out, report = check(runner)
    assert code == 0, out
    assert "step 'log' added at index 3" in out
    assert report["findings"][0]["changes"] == [{"change": "added", "step": "log", "index": 3}]


def test_check_step_inserted_before_the_waiting_step_fails(use_workflow, work, runner, clock):
    waiting_reminders(use_workflow, work)
    use_workflow(
        reminder(wf.compute("greet", lambda c: "hi"), WHO, PAUSE, mail("Plese verify"), DONE)
    )
    code, out, report = check(runner)
    assert code == 1, out
    assert "FAILS: ver-remind v1: definition changed; 3 open runs" in out
    assert "step 'greet' added at index 0" in out
    assert "3 runs waiting at step 'pause' (index 1): would fail" in out
    assert report["ok"] is False and report["findings"][0]["fails"] is True
    clock.advance(3601)
    sweep.sweep("default")
    assert {r.reason for r in runs("ver-remind")} == {ev.REASON_DEFINITION_CHANGED}


def test_check_step_removed_before_the_wait_fails(use_workflow, work, runner):
    waiting_reminders(use_workflow, work)
    use_workflow(reminder(PAUSE, mail("Plese verify"), DONE))
    code, out, _ = check(runner)
    assert code == 1, out
    assert "step 'who' removed (was at index 0)" in out


def test_check_workflow_removed_fails(use_workflow, work, runner):
    waiting_reminders(use_workflow, work)
    wf.unregister("ver-remind")
    code, out, report = check(runner)
    assert code == 1, out
    assert "FAILS: ver-remind v1: workflow is not in the code; 3 open runs" in out
    assert report["findings"][0]["problem"] == "workflow-gone"


# -- migrate -----------------------------------------------------------------------


def test_migrate_moves_waiting_runs_to_the_new_version_and_they_finish_there(
    use_workflow, work, runner
):
    use_workflow(v1())
    orders(2)
    work()
    use_workflow(v2())
    dry = runner.invoke(
        args=["workflows", "migrate", "ver-order", "--from", "1", "--to", "2", "--dry-run"]
    )
    assert dry.exit_code == 0, dry.output
    assert "would move 2 runs of ver-order from v1 to v2" in dry.output
    assert "step 'shipped' index 1 -> 2" in dry.output
    assert set(by_version()) == {1}  # a dry run changes nothing

    result = runner.invoke(args=["workflows", "migrate", "ver-order", "--from", "1", "--to", "2"])
    assert result.exit_code == 0, result.output
    moved = by_version()[2]
    assert len(moved) == 2 and {r.step_index for r in moved} == {2}
    assert {p.step_index for p in pending()} == {2}
    last = run_events(moved[0].run_id)[-1]
    assert last.type == ev.RUN_MIGRATED
    assert {k: last.payload[k] for k in ("from", "to", "fromStep", "toStep", "map")} == {
        "from": 1,
        "to": 2,
        "fromStep": 1,
        "toStep": 2,
        "map": {},
    }
    assert last.metadata.get("actor")
    with db.reading() as conn:
        assert versions.check(conn).ok
    emit("ver.shipped", {}, aggregate_id="ship")
    work()
    # they finish on v2 (its `weighed` step came before where they were: never run)
    assert sorted(r.results["return"] for r in runs("ver-order")) == ["v2:0:None", "v2:1:None"]


def test_migrate_with_a_map_renames_the_step_and_its_result(use_workflow, work, runner):
    use_workflow(v1())
    orders(1)
    work()
    use_workflow(
        wf.workflow(
            "ver-order",
            on="ver.ordered",
            awaits={"shipped": "ver.shipped"},
            version=3,
            steps=[
                wf.compute("number", lambda ctx: int(ctx.trigger.payload["n"])),
                wf.wait_for_event("dispatched", event="shipped", timeout="P7D"),
                wf.ret(lambda ctx: f"v3:{ctx['number']}"),
            ],
        )
    )
    refused = runner.invoke(args=["workflows", "migrate", "ver-order", "--from", "1", "--to", "3"])
    assert refused.exit_code == 1
    (run,) = runs("ver-order")
    assert f"{run.run_id} (waiting at step 'shipped')" in refused.output
    assert by_version()[1][0].step_index == 1  # refused: nothing moved
    bad = runner.invoke(
        args=["workflows", "migrate", "ver-order", "--from", "1", "--to", "3", "--map", "shipped"]
    )
    assert bad.exit_code != 0 and "old_step=new_step" in bad.output
    ok = runner.invoke(
        args=[
            "workflows",
            "migrate",
            "ver-order",
            "--from",
            "1",
            "--to",
            "3",
            "--map",
            "shipped=dispatched",
            "--map",
            "order=number",
        ]
    )
    assert ok.exit_code == 0, ok.output
    emit("ver.shipped", {}, aggregate_id="ship")
    work()
    (done,) = runs("ver-order")
    assert (done.status, done.definition_version, done.results["return"]) == (
        "completed",
        3,
        "v3:0",
    )
    migrated = [e for e in run_events(done.run_id) if e.type == ev.RUN_MIGRATED][0]
    assert migrated.payload["map"] == {"shipped": "dispatched", "order": "number"}


def test_migrate_to_a_version_not_in_the_code_is_refused(use_workflow, work, runner):
    use_workflow(v1())
    result = runner.invoke(args=["workflows", "migrate", "ver-order", "--from", "1", "--to", "9"])
    assert result.exit_code == 1
    assert "version 9 is not in the code" in result.output


@pytest.mark.parametrize("bad", [0, -1, True, "2"])
def test_a_version_must_be_a_positive_integer(bad):
    with pytest.raises(wf.DefinitionError, match="version must be an integer >= 1"):
        wf.workflow("x", on="a.b", version=bad, steps=[wf.ret(1)])


def test_version_and_start_are_not_part_of_the_fingerprint():
    assert v1().fingerprint == v1(start=False).fingerprint
    assert wf.workflow("x", on="a.b", steps=[DONE]).fingerprint == (
        wf.workflow("x", on="a.b", version=1, steps=[DONE]).fingerprint
    )


# Pinned: CI runs this suite on Python 3.11 and 3.13, so one constant proves the
# fingerprint is the same on both (functions are described by their source).
# Editing versions_defs.py changes it, as it would change a deployed definition's.
V1_FINGERPRINT = "e4aa89332f45bc58d8e57b8d58af476fa982f71e54a15e009102e6c1a765c38e"


def test_the_fingerprint_is_the_same_on_every_python_version():
    assert v1().fingerprint == V1_FINGERPRINT
    assert v2().fingerprint != V1_FINGERPRINT
