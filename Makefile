# jsonrpc_threads: `make demo`, `make test` (`make test-fast`), `make check`, `make docs` (`make docs-serve`), `make dist`,
# `make conformance`, `make conformance-server`, `make bench`, `make loadtest`.
# Every target builds its own virtual environment in .venv from nothing but python3:
# `make demo` installs the package alone (what the demo needs), the others add the
# extras they need (`.[dev]`: tests, checks, docs, build).
# The real MCP peers from npm (the reference server, the conformance suite and the
# Node 22 it needs) go to tests/node/node_modules, pinned by tests/node/package-lock.json;
# `make test` installs them when npm is there (their tests skip, with the reason, when not).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DEMO_STAMP := $(VENV)/.installed-demo
DOCS_STAMP := $(VENV)/.installed-docs
STAMP := $(VENV)/.installed

NODE_DIR := tests/node
NODE_STAMP := $(NODE_DIR)/node_modules/.installed
NPM := $(shell command -v npm 2>/dev/null)
NODE22 := $(NODE_DIR)/node_modules/node/bin/node
# Two pinned versions of the suite (tests/node/package.json): 0.1.16, the 2025-11-25
# scenarios, and 0.2.0-alpha.12 (installed as the npm alias conformance-next), every
# client scenario of both eras (2025-11-25, 2026-07-28) and of the extensions.
# The suite's scenario servers listen on all interfaces: the preload binds them to 127.0.0.1.
CONFORMANCE_NODE := $(NODE22) --require $(CURDIR)/$(NODE_DIR)/loopback.cjs
CONFORMANCE := $(CONFORMANCE_NODE) $(NODE_DIR)/node_modules/@modelcontextprotocol/conformance/dist/index.js
CONFORMANCE_NEXT := $(CONFORMANCE_NODE) $(NODE_DIR)/node_modules/conformance-next/dist/index.js
# Every client scenario of each pinned suite (`conformance list --client`), one per line;
# the pytest module tests/test_mcp_conformance.py reads the same files.
CONFORMANCE_SCENARIOS := $(shell cat tests/conformance/scenarios.txt)
CONFORMANCE_NEXT_SCENARIOS := $(shell cat tests/conformance/scenarios-next.txt)
CONFORMANCE_RESULTS := build/conformance

.PHONY: demo test test-deps test-fast check venv clean node-deps conformance conformance-server bench bench-quick docs docs-serve dist browser loadtest

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(DEMO_STAMP): $(PY) pyproject.toml setup.cfg
	$(PY) -m pip install --quiet -e .
	touch $(DEMO_STAMP)

# The docs extra alone (mkdocs, the theme, mkdocstrings): what `make docs` needs.
$(DOCS_STAMP): $(PY) pyproject.toml setup.cfg
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

# --no-compile: the suite compiles what it imports, once (mypy, the docs and the SDKs it never imports stay source).
$(STAMP): $(PY) pyproject.toml setup.cfg
	$(PY) -m pip install --quiet --no-compile -e '.[dev]'
	touch $(STAMP) $(DEMO_STAMP) $(DOCS_STAMP)

venv: $(STAMP)

demo: $(DEMO_STAMP)
	$(PY) -m jsonrpc_threads.examples.demo

# The docs test opens the built site in Debian's Chromium, driven through its
# chromedriver (never a browser that a tool downloads). Installed once, as root
# (CI) or through sudo; without either the test skips and says why.
CHROMIUM := /usr/bin/chromium
CHROMEDRIVER := /usr/bin/chromedriver
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver

browser:
	@if [ ! -x $(CHROMIUM) ] || [ ! -x $(CHROMEDRIVER) ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -q && $(APT_INSTALL); \
		elif sudo -n true 2>/dev/null; then sudo apt-get update -q && sudo $(APT_INSTALL); \
		else echo "make: $(CHROMIUM) is missing and apt-get needs root: the docs browser test will skip"; fi; \
	fi

# The site goes to build/site; --strict turns every warning (a broken link, a
# docstring the reference cannot render) into a failure. It needs only the docs
# extra. Open build/site/index.html from disk, or `make docs-serve` and
# http://127.0.0.1:8000/ (loopback only).
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir build/site

DOCS_PORT ?= 8000
docs-serve: docs
	$(PY) -m http.server --directory build/site --bind 127.0.0.1 $(DOCS_PORT)

# An sdist and a wheel in dist/, each installed into a fresh venv and smoke-tested
# there (from outside the checkout, so the installed copy is what runs).
DIST_VENV := build/dist-venv
# Building needs only `build` (and what it fetches for itself), not the development stack.
DIST_STAMP := $(VENV)/.installed-dist
$(DIST_STAMP): $(PY)
	$(PY) -m pip install --quiet build
	touch $(DIST_STAMP)

dist: $(DIST_STAMP)
	rm -rf dist $(DIST_VENV)-wheel $(DIST_VENV)-sdist
	$(PY) -m build --outdir dist .
	for kind in wheel sdist; do \
		case $$kind in wheel) artefact=$$(ls dist/*.whl);; sdist) artefact=$$(ls dist/*.tar.gz);; esac; \
		$(PYTHON) -m venv $(DIST_VENV)-$$kind && \
		$(DIST_VENV)-$$kind/bin/python -m pip install --quiet "$$artefact" && \
		(cd $(DIST_VENV)-$$kind && bin/python $(CURDIR)/tests/dist_smoke.py "$(CURDIR)") || exit 1; \
	done

$(NODE_STAMP): $(NODE_DIR)/package.json $(NODE_DIR)/package-lock.json
	npm ci --prefix $(NODE_DIR) --no-audit --no-fund
	touch $(NODE_STAMP)

node-deps: $(NODE_STAMP)

# The suite runs in parallel (pytest-xdist): it mostly waits on child processes and
# servers, so more workers than CPUs pay (on two CPUs, a clean clone's run: 4 workers 6 min 07 s
# of pytest, 6 workers 5 min 39 s). TEST_WORKERS=0 runs it in one process.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: the suite starts hundreds
# of interpreters (its peers, the snippets) that would each compile the package again.
TEST_WORKERS ?= 6
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(TEST_WORKERS)
# The fast tier is the pure one: no child process, no socket, no Node, browser or third-party
# package (tests/conftest.py, NEEDS); tests/tiers.py fails a test of it that starts a process or
# opens a socket. Its property and race tests run a fifth of their cases (JSONRPC_TESTS_TIER=fast,
# tests/tiers.py).
FAST_TIER := not peer and not node and not browser and not thirdparty and not soak

# What the suite needs is installed side by side (the venv, the npm packages, the browser; each one's
# output kept together), then the suite runs.
test-deps: $(STAMP) browser $(if $(NPM),$(NODE_STAMP))
	@:

test:
	@$(MAKE) --no-print-directory -j3 -O test-deps
	$(PYTEST)

test-fast: $(STAMP)
	JSONRPC_TESTS_TIER=fast $(PYTEST) -m "$(FAST_TIER)"

conformance: $(STAMP) $(NODE_STAMP)
	@passed=0; for scenario in $(CONFORMANCE_SCENARIOS); do \
		echo "== conformance 0.1.16: $$scenario"; \
		$(CONFORMANCE) client --command "$(PY) tests/conformance/client.py" \
			--scenario $$scenario -o $(CONFORMANCE_RESULTS)/0.1.16 || exit 1; \
		passed=$$((passed + 1)); \
	done; \
	echo "== conformance 0.1.16: $$passed/$(words $(CONFORMANCE_SCENARIOS)) scenarios passed"
	@passed=0; for scenario in $(CONFORMANCE_NEXT_SCENARIOS); do \
		echo "== conformance 0.2.0-alpha.12: $$scenario"; \
		$(CONFORMANCE_NEXT) client --command "$(PY) tests/conformance/client.py" \
			--scenario $$scenario -o $(CONFORMANCE_RESULTS)/0.2.0-alpha.12 || exit 1; \
		passed=$$((passed + 1)); \
	done; \
	echo "== conformance 0.2.0-alpha.12: $$passed/$(words $(CONFORMANCE_NEXT_SCENARIOS)) scenarios passed"

# The suite's SERVER scenarios (both requirement sets, and the extensions) against
# jsonrpc_threads.examples.conformance_server on 127.0.0.1 (tests/conformance/server_suite.py).
conformance-server: $(STAMP) $(NODE_STAMP)
	$(PY) tests/conformance/server_suite.py $(CONFORMANCE_RESULTS)/server

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

# multilspy, the baseline of the language-server case, pins its own requests and
# jedi-language-server: it gets a venv of its own (Python 3.10+), never .venv. Where it
# cannot be installed, the case compares with a bare Content-Length loop only.
MULTILSPY_VENV := build/bench-multilspy
MULTILSPY_STAMP := $(MULTILSPY_VENV)/.installed

$(MULTILSPY_STAMP):
	@($(PYTHON) -m venv $(MULTILSPY_VENV) && $(MULTILSPY_VENV)/bin/python -m pip install --quiet 'multilspy==0.1.1' \
		&& touch $(MULTILSPY_STAMP)) \
		|| echo "make: multilspy could not be installed: the language-server benchmark compares with a bare loop only"

bench: $(BENCH_STAMP) $(MULTILSPY_STAMP)
	$(PY) -m benchmarks.run

bench-quick: $(BENCH_STAMP) $(MULTILSPY_STAMP)
	$(PY) -m benchmarks.run --quick

check: $(STAMP)
	$(PY) -m ruff check jsonrpc_threads benchmarks tests
	$(PY) -m ruff format --check jsonrpc_threads benchmarks tests
	$(PY) -m mypy --strict jsonrpc_threads
	$(PY) -m mypy --strict benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info $(NODE_DIR)/node_modules

# The example web app under gunicorn --threads (loopback only, bounded in time and requests):
# many clients, a hung tool and a crashed server; prints its table and checks (benchmarks/loadtest.py).
# Then McpServer.wsgi_app() itself under gunicorn, both eras (benchmarks/loadtest_server.py).
loadtest: $(STAMP)
	$(PY) -m benchmarks.loadtest
	$(PY) -m benchmarks.loadtest --target server
