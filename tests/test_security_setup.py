"""App-wide protections are set up by the app, not by a feature: CSRF, the error
pages, and the webhook exemption hold whatever order the features are wired in."""

from __future__ import annotations

from typing import Any

from flask import Flask

from webapp import workflows
from webapp.core import security
from webapp.core.config import ROOT


def _bare_app(config: Any) -> Flask:
    app = Flask("order-test", template_folder=str(ROOT / "templates"))
    app.config.update(APP_CONFIG=config, SECRET_KEY=config.secret_key, TESTING=True)
    return app


def test_webhooks_stay_csrf_exempt_when_workflows_are_wired_before_security(
    make_config: Any,
) -> None:
    app = _bare_app(make_config())
    workflows.init_app(app)  # the feature first ...
    security.init_app(app)  # ... app-wide protection after: the exemption still holds
    r = app.test_client().post("/hooks/nowhere", data=b"{}")
    assert r.status_code == 404  # reached the webhook view, not refused for a CSRF token
    assert r.get_json() == {"error": "no webhook at /hooks/nowhere"}


def test_csrf_and_error_pages_are_the_apps_not_the_accounts_features(client: Any) -> None:
    r = client.post("/register", data={"email": "x@example.com"})
    assert r.status_code == 400
    assert "Content-Security-Policy" in r.headers
    from webapp.accounts.views import auth as account_views

    assert "csrf" not in account_views.__dict__ and "CSRFProtect" not in account_views.__dict__
