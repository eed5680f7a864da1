"""Retrievers (semantic, bm25, hybrid) and the fusion they share."""

from varagity.retrieval.base import Retrieval, Retriever, build_retriever

__all__ = ["Retrieval", "Retriever", "build_retriever"]
