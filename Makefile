# Two entry points (see README): `make serve` and `make test`. Both create .venv if missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8080
AGENT_MEMORY_DATA_DIR ?= .agent-memory
export AGENT_MEMORY_DATA_DIR

# aws-sam-cli lives in its own venv (its pins clash with the service's); no Docker needed.
TOOLS := .venv-tools
SAM := $(TOOLS)/bin/sam
SAM_CLI_VERSION ?= 1.170.0
export SAM_CLI_TELEMETRY = 0

.PHONY: serve test lint unit artifact-check cfn-lint sam-validate sam-build sam-build-background tools test-opensearch bench-cold-start \
	bench-artifact install-dev install clean

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

# ruff, then the layer contracts in .importlinter (docs/architecture.md, "Layers")
lint: install-dev
	$(VENV)/bin/ruff check shared functions tests bench
	$(VENV)/bin/lint-imports --no-cache

$(SAM):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet 'aws-sam-cli==$(SAM_CLI_VERSION)'

tools: $(SAM)

# The artifacts tests/deploy/test_built_artifact.py imports from (x86_64, see template.yaml).
sam-build: $(SAM)
	$(SAM) build --template-file template.yaml --build-dir .aws-sam/build

# Starts the tools venv and `sam build` and returns at once; the artifact test waits for
# .aws-sam/build.rc, so the build overlaps the unit tests.
sam-build-background:
	@mkdir -p .aws-sam && rm -f .aws-sam/build.rc
	@( $(MAKE) -s sam-build > .aws-sam/build.log 2>&1; echo $$? > .aws-sam/build.rc ) &

unit: install-dev
	$(PY) -m pytest -n auto --dist loadfile --ignore=tests/deploy/test_built_artifact.py

# Every function served from what `sam build` made (builds first unless `test` started it).
artifact-check: install-dev
	$(PY) -m pytest -p no:xdist tests/deploy/test_built_artifact.py

cfn-lint: install-dev
	$(VENV)/bin/cfn-lint template.yaml

sam-validate: $(SAM)
	$(SAM) validate --lint --template-file template.yaml

test: lint sam-build-background unit
	AGENT_MEMORY_SAM_BUILD=background $(MAKE) -s artifact-check
	$(MAKE) -s cfn-lint sam-validate

# The search contract suite (and the Painless scope script) against a real OpenSearch 2.x:
#   make test-opensearch AGENT_MEMORY_OPENSEARCH_URL=http://localhost:9200
test-opensearch: install-dev
	@test -n "$(AGENT_MEMORY_OPENSEARCH_URL)" || { echo "set AGENT_MEMORY_OPENSEARCH_URL (e.g. http://localhost:9200)"; exit 2; }
	AGENT_MEMORY_OPENSEARCH_URL=$(AGENT_MEMORY_OPENSEARCH_URL) $(PY) -m pytest -p no:xdist -m opensearch tests/search

bench-cold-start: install
	$(PY) bench/cold_start.py

# Layer size and each function's cold start, imported from the built artifact.
bench-artifact: install sam-build
	$(PY) bench/artifact_cold_start.py

clean:
	rm -rf $(VENV) $(TOOLS) .aws-sam .pytest_cache .ruff_cache
