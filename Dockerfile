# syntax=docker/dockerfile:1
#
# The Varagity image: one image for the Dagster code server, webserver and daemon and the
# FastAPI service (see compose.yaml). CPU-only Python stack; the GPU model servers are
# separate images.
#
#   docker build -t varagity:latest .

ARG PYTHON_IMAGE=python:3.11-slim
# Vite 8 needs Node >= 20.19
ARG NODE_IMAGE=node:22-slim

# --- web: the client's static build (served by the API at /) -----------------------------
FROM ${NODE_IMAGE} AS web
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY web/ ./
# vite writes to ../varagity_api/static/app
RUN mkdir -p /src/varagity_api/static && npm run build

# --- build: a virtual environment with Varagity and its dependencies ----------------------
FROM ${PYTHON_IMAGE} AS build

# llama-cpp-python compiles llama.cpp: portable code, not tuned to the build host's CPU.
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_INPUT=1 \
    CMAKE_ARGS="-DGGML_NATIVE=OFF"

RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src

# Dependencies first (their own layer, rebuilt only when pyproject.toml changes).
# torch is pinned to the CPU wheel: from PyPI alone pip would pull a multi-GB CUDA build.
COPY pyproject.toml ./
RUN --mount=type=cache,target=/root/.cache/pip \
    python -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; print('\n'.join(deps))" > /tmp/requirements.txt \
    && pip install --upgrade pip setuptools wheel \
    && pip install --extra-index-url https://download.pytorch.org/whl/cpu \
        "torch==2.13.0" -r /tmp/requirements.txt

# Then the project itself, with the web client's build in its package data.
COPY . .
COPY --from=web /src/varagity_api/static/app ./varagity_api/static/app
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install --no-deps --extra-index-url https://download.pytorch.org/whl/cpu . \
    && pip check \
    && mkdir -p /out/dagster_home /out/deploy \
    && cp dagster_home/dagster.yaml /out/dagster_home/dagster.yaml \
    && cp deploy/workspace.compose.yaml /out/deploy/workspace.compose.yaml \
    && if [ -d eval_suites ]; then cp -r eval_suites /out/eval_suites; fi

# --- runtime ----------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

ARG APP_UID=1000
ARG APP_GID=1000

# libgomp1: OpenMP runtime of the llama.cpp build inside llama-cpp-python.
# libreoffice-impress: converts PowerPoint decks to PDF for the evidence panel's page
# previews (headless, run by the api service).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 libreoffice-impress \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid "${APP_GID}" varagity \
    && useradd --uid "${APP_UID}" --gid "${APP_GID}" --create-home --shell /usr/sbin/nologin varagity

COPY --from=build /opt/venv /opt/venv
COPY --from=build --chown=varagity:varagity /out /app

# Mount points: named volumes copy this ownership on first use; /app/docs and
# /app/graph-docs are the bind mounts of the host's ./corpus and ./graph-docs (compose.yaml).
RUN mkdir -p /app/docs /app/graph-docs /app/dagster_home/storage /var/lib/varagity \
    && chown -R varagity:varagity /app /var/lib/varagity

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DAGSTER_HOME=/app/dagster_home \
    DOCS_PATH=/app/docs \
    GRAPH_DOCS_PATH=/app/graph-docs \
    VARAGITY_HOME=/var/lib/varagity

WORKDIR /app
USER varagity

# 8000 API, 3000 Dagster webserver, 4000 Dagster gRPC code server.
EXPOSE 8000 3000 4000

CMD ["uvicorn", "varagity_api.main:app", "--host", "0.0.0.0", "--port", "8000"]
