"""Helpers and fixtures shared by the test packages, loaded for every test by
`pytest_plugins` in tests/conftest.py: `web` (CSRF, posting, htmx, downloads),
`accounts` (registering, signing in, reading mails; the `user`, `admin` and
`plain` fixtures). Test modules import the helpers from here, never from a
conftest.py."""
