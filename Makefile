# Two commands on a fresh machine:  `make demo`  and  `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
OUT ?= out/tiny
TORCH_INDEX ?=  # empty: pip's configured index; https://download.pytorch.org/whl/cpu for the CPU build

.PHONY: demo demo-1d reproduce-full test test-core test-fast test-bounds lint bench clean tour docs docs-serve

# what the demo needs; the tests' extras (pytest, Dask, the notebook stack: ~45 s more) come on top
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# torch first, from pip's configured index: the CPU build where a local CPU wheel is set up (the reference
	# machines); plain PyPI gives Linux the CUDA build (GBs): TORCH_INDEX=https://download.pytorch.org/whl/cpu
	# installs the CPU build from PyTorch's index. Then the project and its extras (dask: the README's --local-dask)
	$(PIP) install --quiet torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PIP) install --quiet -e ".[torch,data,dask]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install --quiet -e ".[test,torch,data,adapters,docs]"
	touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/sms-langevin run all --preset tiny --out $(OUT) --workers 2  # one process per core

test: $(VENV)/.installed-test
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=30 tests  # two workers: one per core; the slowest tests listed

# the tiers (tests/conftest.py puts each test in one: core, statistical, torch, experiment; pyproject.toml's markers):
# test-core runs the core tier (no statistics, no torch: about 30 s on 2 idle cores, more under load); test-fast the
# quick tier, every test not marked slow (core and the quick torch tests: about 8 minutes on 2 shared cores, the first
# run also compiling the kernels; benchmarks/RESULTS.md has the measurements); `-m "not torch"` runs without torch
test-core: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 --dist loadfile -m core tests

test-fast: $(VENV)/.installed-test
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow" tests

lint: $(VENV)/.installed-test
	$(PY) -m ruff check .

# the guided tour: docs/tour/ executed into $(OUT)/report/tour/ (linked from the report there)
tour: $(VENV)/.installed-test
	$(VENV)/bin/sms-langevin tour --out $(OUT)

# the documentation site, offline, into site/ (--strict: a warning, a broken link or a missing API object fails);
# the tour's notebooks are executed once per change of their source (cached in .cache/docs-tour/, or taken from
# `make tour`'s out/tiny/report/tour/ when executed from the same source)
docs: $(VENV)/.installed-test
	@echo "make docs: under 2 minutes with the tour's executed notebooks cached (.cache/docs-tour/), about 12 minutes on 2 cores the first time (it executes the seven notebooks)"
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict  # (the variable: no notice about the theme's successor)

docs-serve: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict

bench: $(VENV)/.installed
	$(PY) benchmarks/bench_kernels.py

clean:
	rm -rf $(VENV) out site .cache .pytest_cache .hypothesis

demo-1d: $(VENV)/.installed
	$(VENV)/bin/sms-langevin run demo --preset quick --out out/demo  # the report's demo figure alone

reproduce-full: $(VENV)/.installed
	$(VENV)/bin/sms-langevin run all --preset full --out out/full --resume

# the lowest releases pyproject.toml admits (the highest are what `make test` installs), with the
# CPU torch: the kernel, oracle and torch tests in a venv of their own (about 5 minutes and the install)
BOUNDS := numba==0.59.1 numpy==1.26.4 scipy==1.11.4 matplotlib==3.8.4 scikit-learn==1.4.2
BOUNDS_TESTS := tests/test_schemes.py tests/test_brownian.py tests/test_rng.py tests/test_plans.py tests/test_api.py \
	tests/test_torch_parity.py tests/test_torch_chains.py tests/test_torch_module.py tests/test_invariants.py \
	tests/test_oracle.py tests/test_shared_path.py tests/test_reference_outputs.py
test-bounds:
	$(PYTHON) -m venv .venv-bounds
	.venv-bounds/bin/pip install --quiet --upgrade pip
	.venv-bounds/bin/pip install --quiet torch==2.13.0
	.venv-bounds/bin/pip install --quiet -e ".[test,torch,data]" $(BOUNDS)
	.venv-bounds/bin/python -m pytest -q -n 2 --dist loadfile $(BOUNDS_TESTS)
