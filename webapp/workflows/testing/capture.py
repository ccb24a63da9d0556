"""What the harness captures instead of sending: mails, webhook requests and
jobs (the RQ jobs the product would enqueue, run here in-process)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from email.message import EmailMessage
from typing import Any

import httpx


@dataclass(frozen=True)
class Mail:
    """A mail the product would have sent."""

    to: str
    subject: str
    body: str


def mail_of(msg: EmailMessage) -> Mail:
    part = msg.get_body(preferencelist=("plain",))
    body = part.get_content() if isinstance(part, EmailMessage) else ""
    return Mail(str(msg["To"]), str(msg["Subject"]), body.rstrip("\n"))


@dataclass(frozen=True)
class WebhookCall:
    """A webhook request a `send_webhook` step would have sent."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


# What the fake receiver answers: a status, (status, JSON body) or a response.
Answer = int | tuple[int, Any] | httpx.Response
Responder = Callable[[WebhookCall], Answer]


def ok(_call: WebhookCall) -> Answer:
    return 200


def response_for(answer: Answer) -> httpx.Response:
    if isinstance(answer, httpx.Response):
        return answer
    if isinstance(answer, tuple):
        return httpx.Response(answer[0], json=answer[1])
    return httpx.Response(answer)


class WebhookReceiver:
    """An httpx transport that records each request and answers it with the
    responder (200 by default): nothing leaves the process."""

    def __init__(self, responder: Responder = ok) -> None:
        self.calls: list[WebhookCall] = []
        self.responder = responder
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        call = WebhookCall(request.method, str(request.url), dict(request.headers), request.read())
        self.calls.append(call)
        return response_for(self.responder(call))


@dataclass(order=True)
class Job:
    at: datetime
    seq: int
    func: str = field(compare=False)
    args: tuple[Any, ...] = field(compare=False)
    kwargs: dict[str, Any] = field(compare=False)


class JobQueue:
    """The jobs the product enqueued, by due time (then order of enqueueing)."""

    def __init__(self, now: Callable[[], datetime]) -> None:
        self._now = now
        self._jobs: list[Job] = []
        self._seq = itertools.count()

    def add(
        self, func: str, args: tuple[Any, ...], kwargs: dict[str, Any], at: datetime | None
    ) -> None:
        kwargs = {k: v for k, v in kwargs.items() if k != "job_id"}
        self._jobs.append(Job(at or self._now(), next(self._seq), func, args, kwargs))

    def has(self, func: str) -> bool:
        return any(j.func == func for j in self._jobs)

    def pop_due(self) -> Job | None:
        now = self._now()
        due = [j for j in self._jobs if j.at <= now]
        if not due:
            return None
        job = min(due)
        self._jobs.remove(job)
        return job

    def next_at(self) -> datetime | None:
        return min((j.at for j in self._jobs), default=None)

    def __len__(self) -> int:
        return len(self._jobs)
