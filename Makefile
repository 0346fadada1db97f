# jsonrpc_threads: `make demo`, `make test`, `make check`.
# Every target builds its own virtual environment in .venv from nothing but python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test check venv clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m jsonrpc_threads.examples.demo

test: $(STAMP)
	$(PY) -m pytest

check: $(STAMP)
	$(PY) -m ruff check jsonrpc_threads
	$(PY) -m ruff format --check jsonrpc_threads
	$(PY) -m mypy --strict jsonrpc_threads

clean:
	rm -rf $(VENV) build dist *.egg-info
