"""The profile feature: the /profile screen."""

from flask import Flask


def init_app(app: Flask) -> None:
    """Register this feature's routes."""
    from webapp.profile import views

    views.init_app(app)
