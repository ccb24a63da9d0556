"""The workflows feature."""

from flask import Flask


def init_app(app: Flask) -> None:
    """Register this feature's routes, projections and jobs."""
