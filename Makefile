# Two entry points (see README): `make serve` and `make test`. Both create .venv if missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8080
AGENT_MEMORY_DATA_DIR ?= .agent-memory
export AGENT_MEMORY_DATA_DIR

.PHONY: serve test lint unit cfn-lint bench-cold-start install-dev install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[server]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[server,dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

serve: install
	$(VENV)/bin/agent-memory serve --port $(PORT) --data-dir $(AGENT_MEMORY_DATA_DIR)

lint: install-dev
	$(VENV)/bin/ruff check shared functions tests bench

unit: install-dev
	$(PY) -m pytest -n auto --dist loadfile

cfn-lint: install-dev
	$(VENV)/bin/cfn-lint template.yaml

test: lint unit cfn-lint

bench-cold-start: install
	$(PY) bench/cold_start.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
