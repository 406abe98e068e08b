# `make test` and `make demo` build the environment they need on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# the torch version constraints.txt pins (named in what make prints before installing it)
TORCH_PIN := $(shell sed -n 's/^torch==//p' constraints.txt)

.PHONY: test lint demo bench clean

$(STAMP): pyproject.toml constraints.txt
	@echo "make: installing torch $(TORCH_PIN) and hookline with its dev tools into $(VENV)" \
	  "(first run, or after pyproject.toml/constraints.txt change; 1-3 min, most of it torch)..."
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt torch
	$(PY) -m pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)
	@echo "make: $(VENV) is ready"

# ruff, then mypy (its settings and the files it checks are in pyproject.toml), then typed
# user code as a user's `mypy --strict` sees hookline (a cache of its own: other flags)
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict --cache-dir .mypy_cache/strict tests/typed_usage

test: lint
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n 2

demo: $(STAMP)
	$(VENV)/bin/hookline train --work-dir work_dirs/demo --test

# The benchmarks get their own environment, so that the frameworks compared in
# benchmarks/runner_overhead.py never enter the test environment. Each of them
# is optional: one that does not install next to the pinned torch is skipped.
BENCH_VENV     := .venv-bench
BENCH_PY       := $(BENCH_VENV)/bin/python
BENCH_STAMP    := $(BENCH_VENV)/.installed
BENCH_OPTIONAL := pytorch-ignite==0.5.5 mmengine==0.10.7 lightning==2.6.6

$(BENCH_STAMP): pyproject.toml constraints.txt
	@echo "make: installing torch $(TORCH_PIN), hookline and the compared frameworks" \
	  "($(BENCH_OPTIONAL)) into $(BENCH_VENV) (first run only; a minute or more)..."
	test -x $(BENCH_PY) || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q -c constraints.txt torch
	$(BENCH_PY) -m pip install -q -c constraints.txt -e ".[bench]"
	for pkg in $(BENCH_OPTIONAL); do \
	  $(BENCH_PY) -m pip install -q -c constraints.txt "$$pkg" \
	    || echo "bench: $$pkg does not install with torch from constraints.txt; skipped"; \
	done
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BENCH_PY) benchmarks/dispatch.py
	$(BENCH_PY) benchmarks/dispatch_scaling.py
	$(BENCH_PY) benchmarks/runner_overhead.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) work_dirs .pytest_cache .ruff_cache
