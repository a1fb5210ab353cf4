VENV ?= .venv
PY ?= $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test lint bench simulate run migrate

# A fresh clone needs nothing but Python 3.11+: the first target run builds the venv.
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check domain infra services tests bench
	$(VENV)/bin/mypy --strict domain

bench: $(STAMP)
	$(PY) -m bench

simulate: $(STAMP)
	$(PY) -m services.cli simulate --games 500 --seats 2 --seed 1

run: $(STAMP)
	$(PY) -m services.cli serve

migrate: $(STAMP)
	$(PY) -m services.cli migrate
