PY ?= .venv/bin/python
VENV ?= .venv

.PHONY: install test lint bench simulate run migrate

install:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'

test:
	$(PY) -m pytest

lint:
	$(VENV)/bin/ruff check domain infra services tests bench
	$(VENV)/bin/mypy --strict domain

bench:
	$(PY) -m bench

simulate:
	$(PY) -m services.cli simulate --games 200 --seats 2 --seed 1

run:
	$(PY) -m services.cli serve

migrate:
	$(PY) -m services.cli migrate
