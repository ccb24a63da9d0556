"""One writer of the `users` table: the accounts' projection of the user stream.
Privacy and the console publish events on the stream; none of them writes the row."""

from __future__ import annotations

import re

from webapp.accounts import events as ev
from webapp.accounts import projection
from webapp.core.config import ROOT

WRITES = re.compile(r"\b(?:insert|update|delete)\(\s*users\s*\)")


def test_only_the_accounts_projection_writes_the_users_table() -> None:
    writers = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "webapp").rglob("*.py")
        if WRITES.search(path.read_text())
    }
    assert writers == {"webapp/accounts/projection.py"}


def test_every_row_change_is_for_a_declared_user_event() -> None:
    assert set(projection.ROW_CHANGES) <= set(ev.DECLARED)
    assert ev.REGISTERED not in projection.ROW_CHANGES  # inserts the row
    assert ev.ERASED not in projection.ROW_CHANGES  # deletes it


def test_the_user_stream_event_types_are_declared_once() -> None:
    """Features take the names from accounts/events.py. The workflow engine sits
    below the features and names the stream's events it reacts to itself."""
    declared = re.compile(r'["\'](user\.[a-z-]+)["\']')
    features = [p for p in (ROOT / "webapp").rglob("*.py") if "workflows" not in p.parts]
    elsewhere = {
        str(path.relative_to(ROOT)): found
        for path in features
        if path != ROOT / "webapp/accounts/events.py"
        if (found := set(declared.findall(path.read_text())) & set(ev.DECLARED))
    }
    assert elsewhere == {}
