# Two commands for users: `make book` and `make test`.  Everything they need is
# installed here: the Python environment from requirements.txt, the widget
# JavaScript from package-lock.json, and Debian's chromium for browser tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export NUMBA_CACHE_DIR := $(CURDIR)/.numba_cache
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: book test lab bench venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

book: venv
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

test: venv
	$(PY) -m pytest -q tests

lab: venv
	$(VENV)/bin/jupyter lab --ServerApp.allow_root=True --notebook-dir=book

bench: venv
	$(PY) benchmarks/rhs_throughput.py

clean:
	rm -rf _build .numba_cache
