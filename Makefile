# Two entry points (see README): `make serve` and `make test`. Both create .venv if missing.
PYTHON ?= python3
# What `make serve` installs: the service, the MCP server and the progress bars, so every
# command the README shows runs from .venv/bin.
SERVE_EXTRAS := server,mcp,cli
CONTEXT ?= acme
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

.PHONY: serve test lint unit preflight preflight-after-tools generate-deploy generate-sdk artifact-check cfn-lint sam-validate sam-build sam-build-background sam-validate-result test-moved-clock tools test-opensearch bench-cold-start \
	browser-install browser-install-background browser-test \
	integrations-install integrations-install-background integrations-test \
	ts-install ts-install-background ts-test \
	bench-artifact bench-venv bench-mem0-install bench-mem0 install-dev install dist mcp-config clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[$(SERVE_EXTRAS)]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[$(SERVE_EXTRAS),dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# PORT reaches serve as the variable, not --port, so that a taken port's message names PORT=.
serve: install
	PORT=$(PORT) AGENT_MEMORY_PORT_SETTING=make $(VENV)/bin/agent-memory serve --data-dir $(AGENT_MEMORY_DATA_DIR)

# The MCP host registration for this checkout: an mcpServers block whose command is this
# .venv's agent-memory by its absolute path (CONTEXT=acme, the service on PORT).
mcp-config: install
	@$(VENV)/bin/agent-memory mcp-config --context $(CONTEXT) --url http://127.0.0.1:$(PORT)

# A wheel of the package into dist/ (pip install dist/agent_memory-*.whl elsewhere: the client;
# add [server,mcp,cli] for the service).
dist: $(PY)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir dist .

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

# Starts the tools venv, `sam build` and then `sam validate --lint` and returns at once; the
# artifact test waits for .aws-sam/build.rc and `sam-validate-result` for validate.rc, so
# both overlap the unit tests.
sam-build-background:
	@mkdir -p .aws-sam && rm -f .aws-sam/tools.rc .aws-sam/build.rc .aws-sam/validate.rc
	@( $(MAKE) -s tools > .aws-sam/tools.log 2>&1; echo $$? > .aws-sam/tools.rc; \
	   $(MAKE) -s sam-build > .aws-sam/build.log 2>&1; echo $$? > .aws-sam/build.rc; \
	   $(MAKE) -s sam-validate > .aws-sam/validate.log 2>&1; echo $$? > .aws-sam/validate.rc ) &

# Before `sam deploy` (and in `make test`): template.yaml as SAM's own translator expands it, for
# the defaults and every optional parameter set, against AWS's documented quotas (a table with
# each quota's source; tests/deploy/preflight.py). With a finished `sam build` it also measures
# each function plus its layer, unzipped. Runs with the tools venv, which has samtranslator.
PREFLIGHT_BUILD := $(if $(filter 0,$(shell cat .aws-sam/build.rc 2>/dev/null)),--build-dir .aws-sam/build)
preflight: $(SAM)
	$(TOOLS)/bin/python tests/deploy/preflight.py $(PREFLIGHT_BUILD) $(if $(CONFIG_ENV),--config-env $(CONFIG_ENV))

# After editing tests/deploy/iam_table.py (a function's grants) or the template: rewrites
# template.yaml's roles and the docs' stack figures (tests check both are current).
generate-deploy: install-dev
	$(PY) tests/deploy/iam_table.py --write
	$(PY) tests/deploy/stack_figures.py --write
	$(PY) tests/deploy/served_spec.py --write
	$(PY) tests/deploy/route_table.py --write

# After editing client/aio.py (or AsyncChatStream): regenerates the sync client from it.
generate-sdk: install-dev
	$(PY) tests/sdk/sync_from_async.py --write

# In `make test`: waits for the background job's tools venv (never two pip installs into it).
preflight-after-tools:
	@for i in $$(seq 900); do test -f .aws-sam/tools.rc && break; sleep 1; done
	@cat .aws-sam/tools.log; test "$$(cat .aws-sam/tools.rc 2>/dev/null)" = 0
	@$(MAKE) -s preflight

sam-validate-result:
	@for i in $$(seq 600); do test -f .aws-sam/validate.rc && break; sleep 1; done
	@cat .aws-sam/validate.log; test "$$(cat .aws-sam/validate.rc 2>/dev/null)" = 0

unit: install-dev
	$(PY) -m pytest -n auto --dist loadfile --durations=10 --ignore=tests/deploy/test_built_artifact.py \
		--ignore=tests/deploy/test_built_streaming.py --ignore=tests/deploy/test_built_layer.py \
		--ignore=tests/browser --ignore=tests/integrations

# The contract baseline and the scenarios once more with the clock 400 days ahead: nothing they
# hold may depend on the day the suite runs (docs/testing.md).
CLOCK_SHIFT_DAYS ?= 400
test-moved-clock: install-dev
	AGENT_MEMORY_TEST_CLOCK_SHIFT_DAYS=$(CLOCK_SHIFT_DAYS) $(PY) -m pytest -p no:xdist \
		tests/contract/test_response_baseline.py tests/scenarios

# The six agent-framework integrations of the Spectron client, each with its framework
# (tests/integrations/, docs/integrations.md): their own venv, since their dependencies (crewai,
# google-adk, openai-agents, strands-agents, pydantic-ai-slim: ~165 packages, 1.1 GB) stay out
# of the dev extras. The background variant overlaps the unit tests; the test waits for
# .integrations/install.rc.
INTEGRATIONS := .venv-integrations
$(INTEGRATIONS)/.installed: tests/integrations/requirements.txt
	$(PYTHON) -m venv $(INTEGRATIONS)
	$(INTEGRATIONS)/bin/pip install --quiet -r tests/integrations/requirements.txt
	touch $@

integrations-install: $(INTEGRATIONS)/.installed

integrations-install-background:
	@mkdir -p .integrations && rm -f .integrations/install.rc && touch .integrations/install.started
	@( $(MAKE) -s integrations-install > .integrations/install.log 2>&1; echo $$? > .integrations/install.rc; \
	   rm -f .integrations/install.started ) > /dev/null 2>&1 &

integrations-test: install-dev
	AGENT_MEMORY_INTEGRATIONS_REQUIRED=1 $(PY) -m pytest -p no:xdist -s tests/integrations

# The TypeScript SDK (clients/typescript): `npm ci` into its node_modules (Node 20+ and npm;
# when they are missing and we are root, apt installs Debian's nodejs and npm), then its unit
# tests, the generated-types drift check, the operation coverage check and the integration
# tests, which start `agent-memory serve` from this venv. The background variant overlaps
# the unit tests; ts-test waits while it runs (.typescript/install.started), then `ts-install` is
# up to date or, after a failed background install, runs again in the foreground.
TS_DIR := clients/typescript
NPM ?= npm
$(TS_DIR)/node_modules/.installed: $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	@if ! command -v node >/dev/null || ! command -v $(NPM) >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm \
	    || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm; }; \
	  else echo "node and npm are missing: install Debian's nodejs and npm (Node 20+)"; exit 1; fi; fi
	@node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
	  || { echo "the TypeScript SDK needs Node 20+, found $$(node -v)"; exit 1; }
	cd $(TS_DIR) && $(NPM) ci --no-audit --no-fund
	touch $@

ts-install: $(TS_DIR)/node_modules/.installed

ts-install-background:
	@mkdir -p .typescript && rm -f .typescript/install.rc && touch .typescript/install.started
	@( $(MAKE) -s ts-install > .typescript/install.log 2>&1; echo $$? > .typescript/install.rc; \
	   rm -f .typescript/install.started ) > /dev/null 2>&1 &

ts-test: install
	@for i in $$(seq 600); do test -f .typescript/install.started || break; sleep 1; done
	@$(MAKE) -s ts-install
	cd $(TS_DIR) && AGENT_MEMORY_BIN=$(abspath $(VENV))/bin/agent-memory AGENT_MEMORY_TS_REQUIRED=1 $(NPM) test

# The inspector's browser tests drive Debian's Chromium (never a downloaded browser). When it is
# missing and we are root, apt installs it; the background variant overlaps the unit tests and
# the browser tests wait for .browser/install.rc.
CHROMIUM ?= /usr/bin/chromium
browser-install:
	@mkdir -p .browser
	@if [ -x "$(CHROMIUM)" ]; then echo 0 > .browser/install.rc; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  ( DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
	    || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } \
	  ) > .browser/install.log 2>&1; echo $$? > .browser/install.rc; \
	else echo "$(CHROMIUM) is missing: install Debian's chromium (apt-get install chromium)" | tee .browser/install.log; \
	  echo 1 > .browser/install.rc; fi

browser-install-background:
	@mkdir -p .browser && rm -f .browser/install.rc && touch .browser/install.started
	@( $(MAKE) -s browser-install; rm -f .browser/install.started ) > /dev/null 2>&1 &

browser-test: install-dev
	AGENT_MEMORY_BROWSER_REQUIRED=1 $(PY) -m pytest -p no:xdist tests/browser

# Every function served from what `sam build` made (builds first unless `test` started it),
# the chat function streaming through our runtime loop, then the layer's own checks (bytecode,
# nothing Lambda never imports) on the same build.
artifact-check: install-dev
	$(PY) -m pytest -p no:xdist tests/deploy/test_built_artifact.py tests/deploy/test_built_streaming.py \
		tests/deploy/test_built_layer.py

cfn-lint: install-dev
	$(VENV)/bin/cfn-lint template.yaml

sam-validate: $(SAM)
	$(SAM) validate --lint --template-file template.yaml

# cfn-lint itself runs in the unit tests (tests/http/test_routing_contract.py).
test: lint sam-build-background browser-install-background integrations-install-background ts-install-background unit
	$(MAKE) -s preflight-after-tools
	$(MAKE) -s test-moved-clock
	$(MAKE) -s browser-test
	$(MAKE) -s integrations-test
	$(MAKE) -s ts-test
	AGENT_MEMORY_SAM_BUILD=background $(MAKE) -s artifact-check
	$(MAKE) -s sam-validate-result

# The search contract suite (and the Painless scope script) against a real OpenSearch 2.x:
#   make test-opensearch AGENT_MEMORY_OPENSEARCH_URL=http://localhost:9200
test-opensearch: install-dev
	@test -n "$(AGENT_MEMORY_OPENSEARCH_URL)" || { echo "set AGENT_MEMORY_OPENSEARCH_URL (e.g. http://localhost:9200)"; exit 2; }
	AGENT_MEMORY_OPENSEARCH_URL=$(AGENT_MEMORY_OPENSEARCH_URL) $(PY) -m pytest -p no:xdist -m opensearch tests/search

bench-cold-start: install
	$(PY) bench/cold_start.py

# Layer size and each function's cold start, on a fresh `sam build` into a temporary folder.
bench-artifact: install $(SAM)
	SAM=$(SAM) $(PY) bench/artifact_cold_start.py

# The benchmarks' own venv: the service with the ANN index, the local MiniLM (ONNX Runtime, no
# torch) and the bench tools (token counting, the BM25 baseline).
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/pip install --quiet -e '.[server,ann,semantic,bench]'
	touch $@

bench-venv: $(BENCH_VENV)/.installed

# The side-by-side against Mem0 OSS (bench/mem0_side_by_side.py; docs/benchmarks.md): Mem0 and
# its torch go into their own target folder, never into a venv of ours, and its child runs with
# that folder alone on its path. Not part of `make test`. MEM0_ARGS: e.g. --limit 1, --rounds 2,
# --embedder hashing; LOCOMO: the conversations (default .locomo: bench/locomo_data.py).
BENCH_MEM0 := .bench-mem0
$(BENCH_MEM0)/.installed: bench/mem0-requirements.txt
	rm -rf $(BENCH_MEM0)
	$(PYTHON) -m pip install --quiet --target $(BENCH_MEM0) -r bench/mem0-requirements.txt
	touch $@

bench-mem0-install: $(BENCH_MEM0)/.installed

bench-mem0: $(BENCH_VENV)/.installed $(BENCH_MEM0)/.installed
	$(BENCH_VENV)/bin/python bench/mem0_side_by_side.py $(LOCOMO) $(MEM0_ARGS)

clean:
	rm -rf dist $(VENV) $(TOOLS) $(BENCH_VENV) $(BENCH_MEM0) $(INTEGRATIONS) .aws-sam .pytest_cache .ruff_cache .browser .integrations \
		test-artifacts .typescript $(TS_DIR)/node_modules
