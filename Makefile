# jsonrpc_threads: `make demo`, `make test`, `make check`, `make conformance`.
# Every target builds its own virtual environment in .venv from nothing but python3.
# The real MCP peers from npm (the reference server, the conformance suite and the
# Node 22 it needs) go to tests/node/node_modules, pinned by tests/node/package-lock.json;
# `make test` installs them when npm is there (their tests skip, with the reason, when not).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

NODE_DIR := tests/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
NPM := $(shell command -v npm 2>/dev/null)
NODE22 := $(NODE_DIR)/node_modules/node/bin/node
# The suite's scenario servers listen on all interfaces: the preload binds them to 127.0.0.1.
CONFORMANCE := $(NODE22) --require $(CURDIR)/$(NODE_DIR)/loopback.cjs \
	$(NODE_DIR)/node_modules/@modelcontextprotocol/conformance/dist/index.js
# Every client scenario of the pinned suite (`conformance list`), one per line; the
# pytest module tests/test_mcp_conformance.py reads the same file.
CONFORMANCE_SCENARIOS := $(shell cat tests/conformance/scenarios.txt)
CONFORMANCE_RESULTS := build/conformance

.PHONY: demo test check venv clean node-deps conformance bench bench-quick

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m jsonrpc_threads.examples.demo

$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	npm ci --prefix $(NODE_DIR) --no-audit --no-fund
	touch $(NODE_STAMP)

node-deps: $(NODE_STAMP)

test: $(STAMP) $(if $(NPM),$(NODE_STAMP))
	$(PY) -m pytest

conformance: $(STAMP) $(NODE_STAMP)
	@for scenario in $(CONFORMANCE_SCENARIOS); do \
		echo "== conformance: $$scenario"; \
		$(CONFORMANCE) client --command "$(PY) tests/conformance/client.py" \
			--scenario $$scenario -o $(CONFORMANCE_RESULTS) || exit 1; \
	done

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) -m benchmarks.run

bench-quick: $(BENCH_STAMP)
	$(PY) -m benchmarks.run --quick

check: $(STAMP)
	$(PY) -m ruff check jsonrpc_threads
	$(PY) -m ruff format --check jsonrpc_threads
	$(PY) -m mypy --strict jsonrpc_threads

clean:
	rm -rf $(VENV) build dist *.egg-info $(NODE_DIR)/node_modules
