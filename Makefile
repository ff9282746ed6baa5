# Two entry points (see README): `make serve` and `make test`. Both create .venv if missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8080
AGENT_MEMORY_DATA_DIR ?= .agent-memory
export AGENT_MEMORY_DATA_DIR

.PHONY: serve test test-opensearch lint unit cfn-lint bench-cold-start install-dev install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
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

# The search contract suite (and the Painless scope script) against a real OpenSearch 2.x:
#   make test-opensearch AGENT_MEMORY_OPENSEARCH_URL=http://localhost:9200
test-opensearch: install-dev
	@test -n "$(AGENT_MEMORY_OPENSEARCH_URL)" || { echo "set AGENT_MEMORY_OPENSEARCH_URL (e.g. http://localhost:9200)"; exit 2; }
	AGENT_MEMORY_OPENSEARCH_URL=$(AGENT_MEMORY_OPENSEARCH_URL) $(PY) -m pytest -p no:xdist -m opensearch tests/search

bench-cold-start: install
	$(PY) bench/cold_start.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
