# `make test` and `make demo` build the environment they need on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test lint demo bench clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt torch
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples

test: lint
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2

demo: $(STAMP)
	$(VENV)/bin/hookline train --work-dir work_dirs/demo

bench: $(STAMP)
	$(PY) -m pip install -q -c constraints.txt -e ".[dev,bench]"
	$(PY) benchmarks/dispatch.py

clean:
	rm -rf $(VENV) work_dirs .pytest_cache .ruff_cache
