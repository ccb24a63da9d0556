"""Helpers and fixtures shared by the test packages, loaded for every test by
`pytest_plugins` in tests/conftest.py: `web` (CSRF, posting, htmx, downloads),
`accounts` (registering, signing in, reading mails; the `user`, `admin` and
`plain` fixtures), `workflows` (the `use_workflow` fixture, emitting events,
reading runs); `database` holds the cleanup between tests, `burst` the RQ worker
that in-process tests run, `workers` each pytest-xdist worker's own database and
Redis. Test modules import the helpers from here, never from a conftest.py."""
