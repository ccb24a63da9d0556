"""The privacy center: export your data, see your own activity, restrict
processing, delete (also signed out). See docs/privacy.md."""

from __future__ import annotations

from flask import Flask

from webapp.core.render_cache import RenderCache
from webapp.privacy import cli, export_workflow, jobs, projection, tables
from webapp.privacy.views import center, public

del jobs, tables  # imported for their registrations (the jobs, the tables)

_registered = False


def init_app(app: Flask) -> None:
    """Register this feature's projections, workflow, jobs, routes and commands."""
    global _registered
    if not _registered:
        projection.register()
        _registered = True
    export_workflow.register()
    app.extensions["privacy.blank_pages"] = RenderCache(size=center.KEPT_PAGES)
    app.register_blueprint(center.bp)
    app.register_blueprint(public.bp)
    cli.init_app(app)
