"""The test session's processes count their metrics in a directory of their own
(prometheus_client's multiprocess mode, see webapp/metrics); subprocesses the
tests start inherit it.

webapp.metrics reads PROMETHEUS_MULTIPROC_DIR once, when it is first imported,
and pytest imports it before this package: the `webapp-workflows` plugin
(pyproject.toml) imports webapp. So the directory is chosen before pytest
starts: `make test` sets a fresh one; each pytest-xdist worker gets its own
(`pytest_xdist_setupnodes` in tests/conftest.py). A bare `pytest` without it
counts in `<instance>/metrics`, shared with other sessions in this checkout."""
