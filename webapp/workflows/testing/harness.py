"""`WorkflowTest`: the real engine in-process, on a fresh SQLite database,
with a frozen clock, no Redis and no worker (docs/workflows.md, "Testing your
workflows").

What a worker would do is done here, synchronously, by the same functions:
the jobs the product enqueues (`advance_many`, `resume_run`, `continue_run`,
mail delivery ...) are captured (`webapp.jobs.queue.set_sink`) and run by
their dotted paths when due; the projection dispatch runs every async
projection (the workflows' event triggers and wake-ups); a wake-up the store
signals becomes a `resume_run` job at its wake time, as the timer would make
it; when nothing else is due the minute sweep (`resume-due-runs`) runs.
Mails (`webapp.mail.set_sink`) and webhook requests
(`webapp.workflows.interpreter.webhook.set_transport`) are captured, not
sent. `advance` moves the clock from one due wake-up to the next, so a day of
waits and retries passes in milliseconds.

Everything it changes in the process (database engine, clock, wake-up
listener, job, mail and webhook sinks, the registered workflows) is put back
by `close()`."""

from __future__ import annotations

import importlib
import shutil
import tempfile
from collections.abc import Mapping
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask

from webapp import create_app, mail, tenants
from webapp.core import clock, db
from webapp.core.clock import FrozenClock
from webapp.eventstore import Event, projections
from webapp.jobs import queue as jobs_queue
from webapp.publish import publish
from webapp.workflows import client
from webapp.workflows.definition.durations import parse_duration
from webapp.workflows.definition.model import CronTrigger, WebhookTrigger, Workflow
from webapp.workflows.dispatch import job_paths, sweep
from webapp.workflows.engine import heartbeat
from webapp.workflows.interpreter import webhook
from webapp.workflows.store import messages, wake_signal
from webapp.workflows.testing import views
from webapp.workflows.testing.capture import (
    Job,
    JobQueue,
    Mail,
    Responder,
    WebhookCall,
    WebhookReceiver,
    mail_of,
    ok,
)
from webapp.workflows.testing.database import config_for, fresh_database
from webapp.workflows.triggers import cron, registry
from webapp.workflows.triggers import start as triggers

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday morning, the same in every test
MAX_STEPS = 10_000  # jobs and sweeps per run_until_idle: a workflow that never settles


def to_delta(duration: str | timedelta | float) -> timedelta:
    if isinstance(duration, timedelta):
        return duration
    if isinstance(duration, str):
        return parse_duration(duration)
    return timedelta(seconds=duration)


class WorkflowTest:
    """`with WorkflowTest(my_workflow) as t:` runs only the given workflows
    (others registered in the process are set aside until `close`)."""

    def __init__(
        self,
        *workflows: Workflow,
        tenant: str = "default",
        start: datetime | None = None,
        secrets: Mapping[str, str] | None = None,
        webhooks: Responder | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.workflows = workflows
        self.tenant = tenant
        if start is not None and start.tzinfo is None:
            raise ValueError("start must be a timezone-aware datetime")
        self.clock = FrozenClock(start or START)
        self.mails: list[Mail] = []
        self._receiver = WebhookReceiver(webhooks or ok)
        self._secrets = {k.lower(): v for k, v in (secrets or {}).items()}
        self._overrides = dict(config or {})
        self._jobs = JobQueue(self.clock.now)
        self._stack: ExitStack | None = None
        self._app: Flask | None = None

    # --- lifecycle ---------------------------------------------------------
    def __enter__(self) -> WorkflowTest:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> WorkflowTest:
        if self._stack is not None:
            raise RuntimeError("this WorkflowTest is started already")
        stack = self._stack = ExitStack()
        try:
            folder = Path(tempfile.mkdtemp(prefix="webapp-wf-test-"))
            stack.callback(shutil.rmtree, folder, True)
            url = fresh_database(folder)
            stack.enter_context(db.engine_restored())
            stack.callback(clock.set_clock, clock.set_clock(self.clock))
            stack.callback(jobs_queue.set_sink, jobs_queue.set_sink(self._enqueued))
            stack.callback(mail.set_sink, mail.set_sink(lambda m: self.mails.append(mail_of(m))))
            stack.callback(webhook.set_transport, webhook.set_transport(self._receiver.transport))
            before = registry.registered()
            stack.callback(self._restore_registered, before)
            self._app = create_app(config_for(folder, url, self._secrets, self._overrides))
            stack.callback(wake_signal.listen, wake_signal.listen(self._on_wake))
            context = self._app.app_context()
            context.push()
            stack.callback(context.pop)
            for w in registry.registered():  # the process's own, and create_app's
                registry.unregister(w.name)
            for w in self.workflows:
                registry.register(w)
            projections.ensure_cursors()
            stack.callback(heartbeat.stop)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    @staticmethod
    def _restore_registered(before: list[Workflow]) -> None:
        for w in registry.registered():
            registry.unregister(w.name)
        for w in before:
            registry.register(w)

    @property
    def app(self) -> Flask:
        if self._app is None or self._stack is None:
            raise RuntimeError("start the WorkflowTest first (`with WorkflowTest(...) as t:`)")
        return self._app

    # --- captured effects --------------------------------------------------
    @property
    def webhooks(self) -> list[WebhookCall]:
        return self._receiver.calls

    def respond_webhooks(self, responder: Responder) -> None:
        """From now on answer webhook requests with `responder(call)`: a status,
        (status, JSON body) or an `httpx.Response`."""
        self._receiver.responder = responder

    def _enqueued(
        self, func_path: str, args: tuple[Any, ...], kwargs: dict[str, Any], at: datetime | None
    ) -> None:
        if func_path == jobs_queue.DISPATCH_FUNC and at is None and self._jobs.has(func_path):
            return  # one dispatch catches every projection up, as the NX flag ensures
        self._jobs.add(func_path, args, kwargs, at)

    def _on_wake(self, tenant_id: str, run_id: str, step_index: int, wake_at: datetime) -> None:
        """The timer's part: resume this step when its time comes (a run's
        control, below step 0, is claimed by a drain, as `request_resume` does)."""
        if step_index < 0:
            self._jobs.add(job_paths.DRAIN, (tenant_id,), {}, wake_at)
            return
        self._jobs.add(job_paths.RESUME_RUN, (tenant_id, run_id, step_index), {}, wake_at)

    # --- driving -------------------------------------------------------------
    def publish(
        self,
        type: str,
        aggregate: str,
        payload: Mapping[str, Any] | None = None,
        *,
        tenant: str | None = None,
        run: bool = True,
    ) -> Event:
        """Publish an event (`aggregate` is "type/id", e.g. "order/42") the way
        application code does, then run until idle (unless `run=False`)."""
        aggregate_type, sep, aggregate_id = aggregate.partition("/")
        if not sep:
            raise ValueError(f'aggregate must be "type/id", got {aggregate!r}')
        event = publish(type, aggregate_type, aggregate_id, payload, tenant=tenant or self.tenant)
        if run:
            self.run_until_idle()
        return event

    def receive_webhook(self, path: str, body: Any) -> Event:
        """A verified call of a webhook workflow's path (the signature check is
        the route's, tested there); then runs until idle."""
        target = registry.by_webhook_path(path)
        if target is None or not isinstance(target.trigger, WebhookTrigger):
            raise LookupError(f"no workflow under test listens on webhook {path!r}")
        event = triggers.receive_webhook(target, body)
        self.run_until_idle()
        return event

    def start_cron_tick(self, workflow: str | None = None) -> str | None:
        """A tick of a cron workflow, now: the run id (started, queued or
        skipped by its `overlap`), or None when this tick has fired already.
        Then runs until idle."""
        run_id = cron.start_cron_run(self._cron(workflow), self.tenant, self.clock.now())
        self.run_until_idle()
        return run_id

    def scheduler_tick(self, workflow: str | None = None) -> list[str | None]:
        """What the scheduler does at the clock's time: the schedule's tick due
        now, after the missed ticks its `catchup` window holds (oldest first);
        their run ids. Then runs until idle."""
        run_ids = cron.fire(self._cron(workflow), self.tenant, self.clock.now())
        self.run_until_idle()
        return run_ids

    def _cron(self, workflow: str | None) -> Workflow:
        crons = [w for w in registry.registered() if isinstance(w.trigger, CronTrigger)]
        chosen = [w for w in crons if workflow in (None, w.name)]
        if len(chosen) != 1:
            names = [w.name for w in crons]
            raise LookupError(f"name the cron workflow to tick ({workflow!r}; under test: {names})")
        return chosen[0]

    def run_until_idle(self) -> int:
        """Run every due job, then the minute sweep, until nothing is due;
        returns how many jobs ran. The clock does not move."""
        ran = 0
        for _ in range(MAX_STEPS):
            job = self._jobs.pop_due()
            if job is not None:
                self._run(job)
                ran += 1
            elif not self._sweep():
                return ran
        raise RuntimeError(f"still busy after {MAX_STEPS} steps: does a workflow never settle?")

    def advance(self, duration: str | timedelta | float) -> None:
        """Move the clock forward (ISO-8601 like "PT24H", a timedelta or
        seconds), stopping at every wake-up due on the way and running what
        it wakes, as the timer would."""
        delta = to_delta(duration)
        if delta < timedelta(0):
            raise ValueError("time only moves forward")
        target = self.clock.now() + delta
        self.run_until_idle()
        while (due := self._next_due()) is not None and due <= target:
            self.clock.set(max(due, self.clock.now()))
            self.run_until_idle()
        self.clock.set(target)
        self.run_until_idle()

    def _next_due(self) -> datetime | None:
        with db.reading() as conn:
            pending = views.next_wake(conn, self.clock.now())
        times = [t for t in (pending, self._jobs.next_at()) if t is not None]
        return min(times, default=None)

    def _run(self, job: Job) -> None:
        if job.func == jobs_queue.DISPATCH_FUNC:
            # The dispatch job without its Redis flag: every async projection
            # (workflow triggers and wake-ups among them) to the head of the log.
            cfg = self.app.config["APP_CONFIG"]
            result = projections.run_all(max_attempts=cfg.projection_max_attempts)
            if result.retry_at is not None:
                self._jobs.add(job.func, (), {}, result.retry_at)
            return
        module, _, name = job.func.rpartition(".")
        getattr(importlib.import_module(module), name)(*job.args, **job.kwargs)

    def _sweep(self) -> bool:
        """The minute job `resume-due-runs` of every tenant: True when it
        found work (a stale run to advance, due pending rows)."""
        with db.reading() as conn:
            tenant_ids = tenants.all_ids(conn)
        found = 0
        for tenant_id in tenant_ids:
            done = sweep.sweep(tenant_id)
            found += done.get("advanced", 0) + done.get("resumed", 0)
        return found > 0

    # --- talking to a run -----------------------------------------------------
    def signal(self, run_id: str, name: str, payload: Any = None, key: str | None = None) -> str:
        """`wf.signal` in this test's tenant, then run until idle: its id."""
        sent = client.signal(run_id, name, payload, key=key, tenant=self.tenant)
        self.run_until_idle()
        return sent

    def update(
        self, run_id: str, name: str, payload: Any = None, key: str | None = None
    ) -> messages.UpdateResult:
        """`wf.update` in this test's tenant: sent, run until idle, answered
        (accepted, rejected or not-accepting; timed-out if the run never took it)."""
        update_id = messages.request_update(self.tenant, run_id, name, payload, key)
        if update_id is None:
            return messages.UpdateResult(messages.NOT_ACCEPTING)
        self.run_until_idle()
        return messages.await_answer(self.tenant, run_id, update_id, 0)

    def state(self, run_id: str) -> dict[str, Any]:
        """`wf.state` in this test's tenant."""
        return client.state(run_id, tenant=self.tenant)

    # --- reading -----------------------------------------------------------
    def run(self, run_id: str) -> views.Run:
        with db.reading() as conn:
            found = views.one(conn, self.tenant, run_id)
        if found is None:
            raise LookupError(f"no run {run_id!r} in tenant {self.tenant!r}")
        return found

    def runs(self, workflow: str | None = None) -> list[views.Run]:
        """The tenant's runs, oldest first (of one workflow, when named)."""
        with db.reading() as conn:
            return views.all_runs(conn, self.tenant, workflow)
