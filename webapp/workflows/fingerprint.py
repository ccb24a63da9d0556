"""The definition fingerprint: sha256 over name, trigger, awaits and a stable
description of the steps, including their functions' source. A run suspended
under one definition is never resumed under another."""

from __future__ import annotations

from typing import TYPE_CHECKING

from webapp.workflows.api import describe, sha256_json

if TYPE_CHECKING:
    from webapp.workflows.api import Workflow


def fingerprint(wf: Workflow) -> str:
    trigger = {k: describe(v) for k, v in sorted(vars(wf.trigger).items())}
    return sha256_json(
        {
            "name": wf.name,
            "trigger": trigger,
            "awaits": dict(sorted(wf.awaits.items())),
            "steps": describe(list(wf.steps)),
        }
    )
