# Two commands for users: `make book` and `make test` (`make check`, its first stage, for
# contributors: CONTRIBUTING.md).  Everything they need is
# installed here: the Python environment from requirements.txt, the widget
# JavaScript from package-lock.json, and Debian's chromium for browser tests.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Numba caches compiled kernels on disk; the folder is keyed by a hash of the package source, so a
# changed kernel never loads a stale cache entry compiled against another version of its callees.
export NUMBA_CACHE_DIR := $(CURDIR)/.numba_cache/$(shell find usaav_edu -name "*.py" -not -path "*/widgets/*" -not -path "*/figures/*" | LC_ALL=C sort | xargs cat | sha1sum | cut -c1-12)
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# The modules whose docstring examples run as doctests (`make doctest`); the widgets and figures,
# which need their extras to import, are not among them.
DOCTEST_PATHS := usaav_edu/particles usaav_edu/analysis usaav_edu/meanfield \
	usaav_edu/models/model.py usaav_edu/models/user_profile.py usaav_edu/sphere.py usaav_edu/sweep

# Widget JavaScript for the static book: installed from package-lock.json with npm ci and
# copied into _static_widgets/widgets-js/ (git-ignored; _config.yml publishes it).
WIDGET_JS := _static_widgets/widgets-js
WIDGET_JS_STAMP := node_modules/.usaav-widget-js.stamp
# MathJax for the book's pages, served from the site too (published as <site>/mathjax/)
BOOK_MATHJAX := _static_widgets/mathjax
# three.js's classic build for the live views (published as <site>/live/three.min.js)
LIVE_JS := _static_widgets/live
CHROMIUM := /usr/bin/chromium
# Pages executed for the static book, its student edition and the slides have no kernel behind
# them: ExperimentDashboard then saves its controls disabled, with a note on running the notebooks.
# (Set on those commands only: the unit tests and nbval run the widgets as in a live kernel.)
STATIC_PAGE := USAAV_EDU_STATIC_PAGE=1

.PHONY: book check test doctest numba-cache lab bench venv requirements clean widget-js chromium book-student slides pdf site setup-cells

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# requirements.txt, the pinned environment of `make venv` (the tests, the book, the site), and
# binder/requirements.txt, what the chapters import (the package's core and its extras all and lab:
# no jupyter-book, playwright or pytest), are written by uv from pyproject.toml's dependencies and
# extras; run this after changing them.  A version pinned already stays: uv keeps the pins of the
# file it rewrites (delete a line, or pass UPGRADE="--upgrade-package NAME", to move one), and
# Binder's are taken from requirements.txt.  setuptools is the one the virtual environment brings.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --python $(PY) --no-annotate \
	--no-emit-package setuptools --custom-compile-command "make requirements" $(UPGRADE)
requirements: venv
	$(UV_COMPILE) --all-extras --output-file requirements.txt
	$(UV_COMPILE) --extra all --extra lab --constraint requirements.txt --output-file binder/requirements.txt

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund
	touch $@

$(WIDGET_JS_STAMP): node_modules/.package-lock.json tools/widget_js/require-config.js Makefile
	rm -rf $(WIDGET_JS)
	mkdir -p $(WIDGET_JS)/jupyter-threejs
	cp node_modules/requirejs/require.js $(WIDGET_JS)/
	cp tools/widget_js/require-config.js $(WIDGET_JS)/
	cp node_modules/@jupyter-widgets/html-manager/dist/embed-amd.js \
	   node_modules/@jupyter-widgets/html-manager/dist/*.{woff,woff2,ttf,eot,svg} $(WIDGET_JS)/
	cp node_modules/@jupyter-widgets/html-manager/dist/embed.js.LICENSE.txt $(WIDGET_JS)/embed-amd.js.LICENSE.txt
	cp node_modules/jupyter-threejs/dist/index.js node_modules/jupyter-threejs/dist/index.js.LICENSE.txt \
	   $(WIDGET_JS)/jupyter-threejs/
	rm -rf $(LIVE_JS)
	mkdir -p $(LIVE_JS)
	cp node_modules/three/build/three.min.js $(LIVE_JS)/
	cp node_modules/three/LICENSE $(LIVE_JS)/three.min.js.LICENSE.txt
	rm -rf $(BOOK_MATHJAX)
	mkdir -p $(BOOK_MATHJAX)
	cp -r node_modules/mathjax/es5/{tex-mml-chtml.js,input,output,a11y,sre,ui} node_modules/mathjax/LICENSE \
	   $(BOOK_MATHJAX)/
	rm -rf _build/html  # Sphinx copies html_extra_path only when some page is rebuilt
	touch $@

widget-js: $(WIDGET_JS_STAMP)

chromium:
	@test -x $(CHROMIUM) || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

book: venv widget-js
	$(STATIC_PAGE) $(VENV)/bin/jupyter-book build . -W -n --keep-going

# The quality gate (CONTRIBUTING.md): lint (ruff), types (mypy, on the folders pyproject.toml
# names), the unit tests not marked slow, and the package's doctests.  About 2 min with a warm
# Numba cache on two cores.  No formatter runs: the code keeps its hand-aligned layout.
LINT_PATHS := usaav_edu tools tests benchmarks
UNIT_TESTS := tests --ignore=tests/browser --ignore=tests/test_slides_pdf.py
check: venv
	$(PY) -m ruff check $(LINT_PATHS)
	$(PY) -m mypy
	$(PY) -m pytest -q -n auto --dist loadfile -m "not slow" $(UNIT_TESTS)
	$(PY) -m pytest -q -p no:xdist --doctest-modules $(DOCTEST_PATHS)

# where make keeps the Numba cache: `export NUMBA_CACHE_DIR=$$(make -s numba-cache)` shares it
numba-cache:
	@echo $(NUMBA_CACHE_DIR)

# `make check`, then the unit tests it leaves out (marked slow), then the notebooks (nbval), then
# the book build, then the student edition with its check for answers (from the book build's
# execution cache: no notebook runs twice), then the published site assembled from them (the
# decks and every PDF, as `make site`), then the built pages and the assembled site in a browser
test: check widget-js chromium
	$(PY) tools/check_workflow.py --self-check .github/workflows/*.yml
	$(PY) -m pytest -q -n auto --dist loadfile -m slow $(UNIT_TESTS)
	$(PY) -m pytest -q -n auto --dist loadfile --nbval-lax book/
	$(STATIC_PAGE) $(VENV)/bin/jupyter-book build . -W -n --keep-going
	$(STUDENT_EDITION)
	$(ASSEMBLE_SITE)
	$(PY) -m pytest -q -n auto --dist loadfile -m "not lab" tests/browser tests/test_slides_pdf.py
	$(PY) -m pytest -q -p no:xdist -m lab tests/browser

# The seminar kit (README, "For instructors"): the student edition without solutions
# (_build/student/_build/html), one reveal.js deck per session from book/seminar/slides/
# (_build/slides), and one PDF per
# chapter and problem set printed by chromium from the built book (_build/pdf).
# (tools/editions.py: builds with the execution cache of `make book`, so after it no notebook runs
# again; with a cold cache the notebooks run, the edition is the same)
STUDENT_EDITION = $(STATIC_PAGE) $(PY) tools/editions.py student -- -W -n --keep-going
book-student: venv widget-js
	$(STUDENT_EDITION)

slides: book
	$(STATIC_PAGE) $(PY) tools/slides.py --out _build/slides

pdf: book chromium
	$(PY) tools/print_pdf.py --site _build/html --out _build/pdf

# The published site (README, "Publishing"): the book at the root, the student edition
# (student/), the session decks (slides/) and the PDFs (pdf/: chapters, problem sets' handouts
# and keys, the seminar's cards and syllabus), assembled by tools/assemble_site.py through a
# temporary folder into _build/site, once every link into them resolves.
ASSEMBLE_SITE = $(STATIC_PAGE) $(PY) tools/assemble_site.py --out _build/site
site: book book-student chromium
	$(ASSEMBLE_SITE)

# Every notebook of the book starts with a set-up cell that installs the package where it is missing
# (Colab, a downloaded chapter), only from the source _config.yml pins: repository.url at
# repository.install_ref (a commit or a release tag); with none pinned it installs nothing and says
# so.  Run this after changing either: it rewrites the cell in place and changes nothing else.
# (It also writes each chapter's numbering cell for JupyterLab, from the chapter's place in
# _toc.yml: run it after adding or moving a chapter too.)
setup-cells: venv
	$(PY) tools/setup_cell.py book/ch*.ipynb book/widgets.ipynb book/large_n.ipynb

# The learner's JupyterLab on book/.  jupyterlab_myst (requirements.txt) renders the chapters' MyST in
# it: theorem and exercise blocks, dropdown solutions, math, cross-references within a chapter
# (tests/browser/test_lab.py starts a server like this one and checks chapter 1 in chromium).
# No news pop-up: the server fetches no news feed (LabApp.news_url=None), and the defaults in
# tools/lab_settings/overrides.json say "never" to news and update checks, so JupyterLab does not
# ask (a learner's own settings still win).
LAB_OPTIONS := --ServerApp.allow_root=True --LabApp.news_url=None \
	--LabApp.app_settings_dir=$(CURDIR)/tools/lab_settings
lab: venv
	$(VENV)/bin/jupyter lab $(LAB_OPTIONS) --notebook-dir=book

# Every docstring example of DOCTEST_PATHS, run as written (about 15 s, a small sweep included).
doctest: venv
	$(PY) -m pytest -q -p no:xdist --doctest-modules $(DOCTEST_PATHS)

bench: venv
	$(PY) benchmarks/rhs_throughput.py

clean:
	rm -rf _build .numba_cache _static_widgets
