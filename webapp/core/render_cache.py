"""Rendered HTML kept between requests, for a page (or part of one) whose every input
is named by its key.

A personal page may be served from here only when its key contains the version
of the data it shows: the account's event version moves with every change of
the account (the user's own events), so a change is never answered with the old
rendering, in any process. Nothing here replaces a check: the session is
verified against the database on every request before a cached part is looked
up, and answers still carry `Cache-Control: no-store`.

One entry per `owner` (e.g. one browser session of one account); a rendering
under a new `version` replaces the old one. At most `size` owners are kept
(least recently used first out), so memory stays bounded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from markupsafe import Markup


class RenderCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, tuple[Hashable, Markup]] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_render(
        self, owner: Hashable, version: Hashable, render: Callable[[], Markup]
    ) -> Markup:
        """The rendering of `owner` at `version`: kept, or made by `render()`."""
        with self._lock:
            kept = self._items.get(owner)
            if kept is not None and kept[0] == version:
                self._items.move_to_end(owner)
                return kept[1]
        html = render()
        with self._lock:
            self._items[owner] = (version, html)
            self._items.move_to_end(owner)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return html

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
