# Two commands set everything up from nothing: `make demo` and `make test` (see README, Quick start).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# Installs are redone only when the files they are made from change.
DEMO_STAMP := $(VENV)/.demo-installed
TEST_STAMP := $(VENV)/.test-installed
PYTEST_ARGS ?=

.PHONY: demo test lint bench docs gallery site clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(DEMO_STAMP): $(PY) vidmag/pyproject.toml kernelkit/pyproject.toml
	$(PIP) install -q -e kernelkit -e vidmag -e specux
	touch $@

$(TEST_STAMP): $(DEMO_STAMP) specux/pyproject.toml requirements-dev.txt scripts/dev/install_torchaudio.sh
	$(PIP) install -q -e "kernelkit[opencl]" -e "vidmag[torch,opencl,face]" -e "specux[torch,opencl]" -r requirements-dev.txt
	bash scripts/dev/install_torchaudio.sh $(PY)
	touch $@

demo: $(DEMO_STAMP)
	$(VENV)/bin/vidmag demo -o demo-output

test: $(TEST_STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check .

bench: $(TEST_STAMP)
	$(PY) bench/vidmag_reference.py
	$(PY) bench/specux_cpu.py

# mkdocs, its theme and mkdocstrings come with the dev requirements; the site is written to site/. When
# site-assets/gallery exists (`make gallery`), the build puts it under site/gallery/ and the gallery page shows
# its animated previews (docs/_hooks/gallery_assets.py); without it the site builds the same, without them.
docs: $(TEST_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Every sample clip (../shared/data/clips) with every preset, into site-assets/gallery (git-ignored): 10 to
# 40 minutes on 2 busy cores. Then `make docs` publishes it.
gallery: $(TEST_STAMP)
	$(PY) scripts/dev/gallery.py --out site-assets/gallery

# The whole site in one command: the gallery first when it has not been made (its manifest, gallery.json, is
# written last, so an interrupted run is made again), then the site with it.
site: $(TEST_STAMP)
	test -f site-assets/gallery/gallery.json || $(MAKE) gallery
	$(MAKE) docs

clean:
	rm -rf $(VENV) demo-output site
