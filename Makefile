# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: demo test install install-test bench lint docs clean

$(VENV)/.installed: setup.cfg setup.py pyproject.toml arcticlite/format/_native.c
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-demo: $(VENV)/.installed
	$(PIP) install -q -e '.[plot]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -q -e '.[test,s3]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: $(VENV)/.installed-demo
	$(PY) -m arcticlite.demo demo-data

test: install-test
	$(PY) -m pytest -q

bench: install-test
	$(PIP) install -q -e '.[bench]'
	$(PY) -m benchmarks

docs: install
	$(PIP) install -q -e '.[docs]'
	$(VENV)/bin/mkdocs build --strict --site-dir site

lint: install-test
	$(PIP) install -q 'ruff==0.17.6' 'mypy==2.4.1'
	$(VENV)/bin/ruff check arcticlite tests
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) demo-data site
