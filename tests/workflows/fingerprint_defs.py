"""Definitions whose fingerprint must come out the same in every process."""

from __future__ import annotations

import functools

import webapp.workflows as wf


def plain(ctx):
    return ctx.trigger.payload["n"]


def scaled(ctx, factor):
    return ctx.trigger.payload["n"] * factor


class Pricing:
    def __init__(self, rate: int) -> None:
        self.rate = rate

    def price(self, ctx):
        return ctx.trigger.payload["n"] * self.rate


class Doubler:
    def __call__(self, ctx):
        return ctx.trigger.payload["n"] * 2


# No source to read: described by module, name and bytecode.
SOURCELESS = eval("lambda ctx: ctx.trigger.payload['n'] + 1")  # noqa: S307

EVERY_KIND = wf.workflow(
    "fingerprint-kinds",
    on="fp.go",
    filter=functools.partial(lambda e, k: k in e.payload, k="n"),
    key=Doubler(),
    steps=[
        wf.compute("function", plain),
        wf.compute("lambda", lambda ctx: 1),
        wf.compute("partial", functools.partial(scaled, factor=3)),
        wf.compute("bound", Pricing(5).price),
        wf.compute("object", Doubler()),
        wf.compute("sourceless", SOURCELESS),
        wf.ret(lambda ctx: ctx["partial"]),
    ],
)
