"""Imported by the code server's forkserver (:data:`varagity_assets.code_server.WARM_MODULES`):
builds the location's definitions once, before any run worker is forked from it, and
pays once the first-use costs every ingest run would otherwise pay on its own (measured
with py-spy over 200 files: ~0.6 s of CPU per run). Nothing else imports it."""

import httpx2
import upath.core  # noqa: F401  (DagsterInstance.from_ref's defs-state storage imports it)

import varagity.stores.bm25.tantivy_store  # noqa: F401  (the embedded BM25 backend)
from varagity.ingest.parsers.registry import parsers
from varagity.models.base import tls_context
from varagity.tokens import count_tokens
from varagity_assets.definitions import build

build()
parsers()  # imports every parser family
count_tokens("warm")  # loads the cl100k ranks (~0.3 s)
tls_context()  # loads the CA store, shared by every model client
# a transport imports its HTTP stack on first construction (httpcore2, h11, anyio,
# truststore: ~7% of an ingest run worker's CPU when each run paid it)
httpx2.Client().close()
