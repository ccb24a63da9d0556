"""Kept for one release: `publish` now lives in webapp/publish.py (this name
suggested the event types, which are declared per feature)."""

from __future__ import annotations

from webapp.publish import MAX_ID, MAX_NAME, PublishError, publish

__all__ = ["MAX_ID", "MAX_NAME", "PublishError", "publish"]
