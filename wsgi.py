"""WSGI entry point: `gunicorn wsgi:app` (also what `flask --app wsgi ...` loads)."""

from webapp import create_app
from webapp.core.config import ConfigError

try:
    app = create_app()
except ConfigError as exc:
    raise SystemExit(f"configuration error: {exc}") from None
