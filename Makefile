VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME := $(VENV)/.runtime
DEV := $(VENV)/.dev

.PHONY: install run test test-fast lint format bench simulate migrate demo lock

# A fresh clone needs nothing but Python 3.11+: the first target builds .venv. `make run`
# installs the runtime dependencies only (requirements/runtime.lock); test, lint and bench
# add the dev toolchain (requirements/dev.lock).
$(PY):
	python3 -m venv $(VENV)

$(RUNTIME): requirements/runtime.lock pyproject.toml clients/python/pyproject.toml | $(PY)
	$(PY) -m pip install -q -r requirements/runtime.lock
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m pip install -q --no-deps -e clients/python
	touch $@

$(DEV): requirements/dev.lock $(RUNTIME)
	$(PY) -m pip install -q -r requirements/dev.lock
	touch $@

install: $(DEV)

# The server with a game ready against a bot (`bura demo`): it prints the link to play.
run: $(RUNTIME)
	$(VENV)/bin/bura demo

demo: run

test: $(DEV)
	$(PY) -m pytest

# Domain and SQLite only, properties at a fifth of their examples: no PostgreSQL, Redis
# or real servers needed.
test-fast: $(DEV)
	BURA_EXAMPLES_SCALE=0.2 $(PY) -m pytest -m "not external and not slow" -p no:cacheprovider -n 2

lint: $(DEV)
	$(VENV)/bin/ruff check domain infra services tests bench harness clients
	$(VENV)/bin/ruff format --check domain infra services tests bench harness clients
	$(VENV)/bin/mypy --strict domain infra services clients/python/bura_client bench harness

format: $(DEV)
	$(VENV)/bin/ruff check --fix domain infra services tests bench harness clients
	$(VENV)/bin/ruff format domain infra services tests bench harness clients

# QUICK=1: every benchmark with small counts, in a few minutes (what CI runs).
bench: $(DEV)
	$(PY) -m bench $(if $(QUICK),--quick)

simulate: $(RUNTIME)
	$(VENV)/bin/bura simulate --games 500 --seats 2 --seed 1

migrate: $(RUNTIME)
	$(VENV)/bin/bura migrate

# Both lock files from pyproject.toml (needs uv, which the dev toolchain brings).
lock: $(DEV)
	$(VENV)/bin/uv pip compile pyproject.toml --python-version 3.11 --generate-hashes -q \
		-o requirements/runtime.lock
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --python-version 3.11 \
		--generate-hashes -q -o requirements/dev.lock
