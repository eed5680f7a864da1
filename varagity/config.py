"""Typed settings: the one place Varagity reads its configuration.

Every module calls :func:`get_settings`; nothing reads ``os.environ`` directly.
Values come from the process environment, then ``.env`` in the working directory,
then the defaults below (the embedded, zero-configuration stack).
"""

from __future__ import annotations

import ipaddress
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from varagity.local_models import LOCAL_MODELS

RetrievalMethod = Literal["semantic", "bm25", "hybrid", "reranked", "hyde"]
BaseMethod = Literal["semantic", "bm25", "hybrid", "hyde"]
HydeBaseMethod = Literal["semantic", "hybrid"]
ChunkingStrategy = Literal[
    "structure_aware",
    "recursive_character",
    "token_based",
    "markdown_aware",
    "semantic",
    "docling_hybrid",
]
OcrEngineName = Literal["rapidocr", "tesseract", "easyocr"]
ChatEngineName = Literal["simple", "condense_context"]
# the keys of varagity.local_models.LOCAL_MODELS, default first (a test keeps them equal)
LocalLlmName = Literal["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"]
# the keys of varagity.graph.registry.ENGINES (a test keeps them equal)
GraphEngineName = Literal["lightrag"]
GraphQueryMode = Literal["local", "global", "hybrid", "mix", "naive"]

RETRIEVAL_METHODS: tuple[str, ...] = ("semantic", "bm25", "hybrid", "reranked", "hyde")

# Settings whose change makes already-ingested chunks out of date.
REINGEST_AFFECTING = (
    "CHUNKING_STRATEGY",
    "CHUNK_SIZE",
    "CHUNK_OVERLAP",
    "CHUNK_HEADERS",
    "CONTEXTUALIZE",
    "OCR_ENGINE",
)

# Settings whose change makes the message graph's extracted entities and relations out
# of date (the graph's stale flag): the chat model that extracts them, how it is asked,
# and the embedding model of the engine's indexes. The graph evaluation names its graphs
# by the same ones and GRAPH_ENGINE (varagity.eval.graph_eval.EXTRACTION_SETTINGS);
# another engine keeps another working directory, so it leaves no graph stale.
GRAPH_AFFECTING = (
    "LLM_MODEL",
    "LOCAL_LLM",
    "GRAPH_EXTRACTION",
    "GRAPH_EXTRACT_FORMAT",
    "GRAPH_CHUNK_TOKENS",
    "GRAPH_EXTRACT_MAX_TOKENS",
    "EMBEDDING_MODEL",
    "EMBEDDING_DIM",
)

# Settings ``PATCH /api/settings`` may change while the app runs. Everything else
# (addresses, ports, paths, the embedding model and its dimension) decides which
# stores and servers a process connects to, and needs a restart.
RUNTIME_EDITABLE = (
    *REINGEST_AFFECTING,
    "SEMANTIC_BREAKPOINT_PERCENTILE",
    "OCR_DPI",
    "INGEST_BATCH_SIZE",
    "INGEST_BATCH_BYTES",
    "MAX_FILE_BYTES",
    "LLM_MAX_TOKENS",
    "LLM_TEMPERATURE",
    "ANSWER_CITATIONS",
    "ANSWER_CONTEXT",
    "ANSWER_CONTEXT_TOKENS",
    "CONTEXT_MAX_TOKENS",
    "RETRIEVAL_METHOD",
    "SEMANTIC_WEIGHT",
    "BM25_WEIGHT",
    "TOP_K",
    "RERANK_ENABLED",
    "RERANK_BASE_METHOD",
    "RERANK_CANDIDATES",
    "RERANK_TOP_N",
    "HYDE_ENABLED",
    "HYDE_BASE_METHOD",
    "HYDE_MAX_TOKENS",
    "ARM_CANDIDATES",
    "RRF_K",
    "CHAT_ENGINE",
    "CONDENSE_ENABLED",
    "CONDENSE_MAX_TOKENS",
    "CHAT_HISTORY_TURNS",
)


class Settings(BaseSettings):
    """All runtime configuration, validated once at load time."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        case_sensitive=True,
        validate_default=True,
    )

    # --- places -----------------------------------------------------------
    VARAGITY_HOME: Path = Field(
        default=Path(".varagity"),
        description="State folder of the embedded stack (Postgres data, BM25 index, logs).",
    )
    DOCS_PATH: Path = Field(default=Path("corpus"), description="The watched corpus folder.")
    BM25_INDEX_PATH: Path | None = Field(
        default=None, description="Tantivy index directory; defaults to VARAGITY_HOME/bm25."
    )

    # --- stores -----------------------------------------------------------
    DATABASE_URL: str | None = Field(
        default=None,
        description="Postgres (>=15, pgvector) URL; unset starts the embedded server.",
    )
    ELASTICSEARCH_URL: str | None = Field(
        default=None, description="Elasticsearch URL; unset uses the embedded Tantivy index."
    )
    ELASTICSEARCH_INDEX: str = Field(
        default="varagity_contextual_bm25",
        description="Elasticsearch index holding the BM25 chunks (with ELASTICSEARCH_URL).",
    )
    ELASTICSEARCH_API_KEY: str | None = Field(
        default=None, description="Elasticsearch API key (the base64 `id:key` form it issues)."
    )
    ARTIFACT_STORE: Literal["files", "postgres"] = Field(
        default="files",
        description="Where the documents pipeline keeps what one step hands the next (parsed "
        "text, chunks, vectors): 'files' under VARAGITY_HOME/artifacts (one host), "
        "'postgres' in the database (steps of a run on different hosts).",
    )

    # --- step execution (several hosts) -------------------------------------
    STEP_EXECUTOR: Literal["in_process", "celery"] = Field(
        default="in_process",
        description="How the documents pipeline's runs execute their steps: 'in_process' in "
        "the run's own process, 'celery' as tasks on Celery workers (dagster-celery; needs "
        "CELERY_BROKER_URL and ARTIFACT_STORE=postgres). Read when a run starts.",
    )
    CELERY_BROKER_URL: str | None = Field(
        default=None,
        description="Celery broker of the step workers (redis://host:6379/0) with "
        "STEP_EXECUTOR=celery.",
    )
    CELERY_RESULT_BACKEND: str | None = Field(
        default=None,
        description="Where Celery workers leave step results; defaults to CELERY_BROKER_URL.",
    )
    CELERY_QUEUE: str = Field(
        default="varagity",
        min_length=1,
        description="Queue of the steps any worker may run (parse, chunk, embed, Postgres writes).",
    )
    CELERY_INDEX_QUEUE: str = Field(
        default="varagity-index",
        min_length=1,
        description="Queue of the steps that must run where the Tantivy index lives (BM25 "
        "writes, purges, blurbs): consumed by that host's worker alone. With "
        "ELASTICSEARCH_URL such steps go to CELERY_QUEUE.",
    )
    CELERY_VISIBILITY_TIMEOUT_S: float = Field(
        default=300.0,
        ge=5.0,
        le=86400.0,
        description="Seconds after which a step whose worker took it and then vanished (host "
        "cut off, worker killed) is handed to another worker; above the longest step.",
    )

    # --- models -----------------------------------------------------------
    LLM_BASE_URL: str | None = Field(
        default=None,
        description="OpenAI-compatible chat server; unset starts the local LOCAL_LLM server.",
    )
    LOCAL_LLM: LocalLlmName = Field(
        default="qwen2.5-coder-0.5b",
        description="Chat model the embedded stack serves when LLM_BASE_URL is unset "
        "(docs/models.md).",
    )
    MODEL_CACHE_PATH: Path = Field(
        default=Path("~/.cache/varagity/models"),
        description="Where GGUFs shipped in several packages are assembled once and verified "
        "(shared by every VARAGITY_HOME).",
    )
    LLM_MODEL: str = Field(
        default="",
        description="Model name sent to the chat server; unset: LOCAL_LLM's served alias "
        "(e.g. qwen2.5-coder-0.5b-instruct).",
    )
    LLM_API_KEY: str = Field(
        default="sk-local", description="Bearer token sent to the chat server (LLM_BASE_URL)."
    )
    LLM_CONTEXT_TOKENS: int = Field(
        default=8192,
        ge=512,
        description="The chat model's context window in tokens: prompts (evidence, history, "
        "a graph day) are cut to fit it, with the answer's LLM_MAX_TOKENS.",
    )
    LLM_MAX_TOKENS: int = Field(
        default=256, ge=1, description="Answer cap in tokens, the same for every front end."
    )
    LLM_TEMPERATURE: float = Field(
        default=0.0,
        ge=0.0,
        le=2.0,
        description="Sampling temperature of answers; 0 answers the same evidence the same way.",
    )
    LLM_CONCURRENCY: int = Field(
        default=1,
        ge=1,
        description="Answers one API process generates at once; later chats wait in line "
        "and are told so in-band (a 'queued' event with their position). 1 suits the "
        "packaged llama.cpp server, which generates one completion at a time.",
    )
    LLM_REPEAT_PENALTY: float = Field(
        default=1.1,
        ge=1.0,
        le=2.0,
        description="Answers: llama.cpp's repeat penalty (sent only when not 1.0; set 1.0 "
        "for servers that reject unknown fields, such as OpenAI's).",
    )
    LLM_FREQUENCY_PENALTY: float = Field(
        default=0.0, ge=-2.0, le=2.0, description="Answers: OpenAI frequency_penalty."
    )
    LLM_PRESENCE_PENALTY: float = Field(
        default=0.0, ge=-2.0, le=2.0, description="Answers: OpenAI presence_penalty."
    )
    ANSWER_CITATIONS: Literal["quoted", "attributed", "model"] = Field(
        default="quoted",
        description="Answers: 'quoted' releases each sentence only once a verbatim quote of "
        "a passage holds the values it states, cites that passage and sends the quote with "
        "it; a sentence without one is dropped and an answer left with none abstains "
        "(varagity/generation/quotes.py). 'attributed' streams every sentence and cites the "
        "passage that supports it (varagity/generation/grounding.py); 'model' leaves the "
        "model's own markers as written.",
    )
    ANSWER_CONTEXT: Literal["sentences", "chunks"] = Field(
        default="sentences",
        description="Answers: what the model is shown of each passage: 'sentences', the "
        "sentences (or table rows) that share the most words with the question, with their "
        "neighbours, within ANSWER_CONTEXT_TOKENS; 'chunks', the whole chunks. Smaller "
        "prompts give the first token sooner (docs/models.md has the measurements).",
    )
    ANSWER_CONTEXT_TOKENS: int = Field(
        default=150,
        ge=64,
        le=32000,
        description="Answers with ANSWER_CONTEXT=sentences: about how many tokens of "
        "passage text the prompt carries.",
    )
    GRAPH_ANSWER_CONTEXT_TOKENS: int = Field(
        default=300,
        ge=64,
        le=32000,
        description="Graph answers with ANSWER_CONTEXT=sentences: about how many tokens "
        "of the day cards' messages the prompt carries (the best messages with the one "
        "before and the reply after).",
    )
    CONTEXT_MAX_TOKENS: int = Field(
        default=96, ge=8, description="Cap on a contextual blurb's length, in tokens."
    )
    EMBEDDING_BASE_URL: str | None = Field(
        default=None,
        description="OpenAI-compatible embeddings server; unset starts the packaged MiniLM server.",
    )
    EMBEDDING_MODEL: str = Field(
        default="all-MiniLM-L6-v2",
        description="Model name sent to the embeddings server; recorded with every chunk and "
        "bundle (a bundle of another model is refused).",
    )
    EMBEDDING_API_KEY: str = Field(
        default="sk-local", description="Bearer token sent to the embeddings server."
    )
    EMBEDDING_DIM: int = Field(
        default=384,
        ge=8,
        le=16000,
        description="Vector dimension of EMBEDDING_MODEL; the vector column is created with it.",
    )
    EMBEDDING_BATCH_SIZE: int = Field(
        default=32, ge=1, le=2048, description="Texts per embeddings request."
    )
    MODEL_TIMEOUT_S: float = Field(
        default=120.0, gt=0, description="Seconds one model server request may take."
    )
    MODEL_MAX_RETRIES: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Retries of a model request that failed transiently, after its first "
        "try (0: none), before the caller sees the outage.",
    )
    MODEL_STEP_RETRIES: int = Field(
        default=5,
        ge=0,
        le=10,
        description="Times a Dagster step that meets a model server or Postgres outage "
        "(after the client's own MODEL_MAX_RETRIES) is retried before it fails.",
    )
    MODEL_STEP_RETRY_DELAY_S: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description="Base wait before such a step retry: the n-th waits (2^n - 1) times "
        "this, plus or minus this (jitter); the defaults wait about 5 minutes in all.",
    )

    # --- ingest -----------------------------------------------------------
    CHUNKING_STRATEGY: ChunkingStrategy = Field(
        default="recursive_character",
        description="How files are cut into chunks: recursive_character, structure_aware "
        "(code at functions and classes, Markdown at headings), token_based, markdown_aware, "
        "semantic or docling_hybrid; a change flags the corpus stale.",
    )
    CHUNK_SIZE: int = Field(
        default=1200,
        ge=16,
        le=20000,
        description="Chunk size in the strategy's unit: characters for recursive_character, "
        "markdown_aware and structure_aware, tokens for token_based, semantic and "
        "docling_hybrid.",
    )
    CHUNK_OVERLAP: int = Field(
        default=200,
        ge=0,
        description="How much of a chunk the next one repeats, in CHUNK_SIZE's unit.",
    )
    CHUNK_HEADERS: bool = Field(
        default=True,
        description="Prefix every chunk's BM25-indexed text with a deterministic header: "
        "file path, heading path, enclosing class/function (the embedding leaves it out).",
    )
    SEMANTIC_BREAKPOINT_PERCENTILE: float = Field(
        default=90.0,
        gt=0,
        lt=100,
        description="semantic chunker: cut where the distance between neighbouring "
        "sentences is above this percentile",
    )
    OCR_ENGINE: OcrEngineName = Field(
        default="rapidocr",
        description="OCR for scanned PDF pages and images: rapidocr (models in the package), "
        "tesseract (Debian package) or easyocr (its offline model package).",
    )
    OCR_DPI: int = Field(default=200, ge=72, le=600, description="Render resolution for OCR.")
    DOCLING_ARTIFACTS_PATH: Path | None = Field(
        default=None,
        description="Folder of docling's layout model weights; set it to parse PDFs with "
        "docling's standard pipeline instead of pypdfium2 + OCR.",
    )
    CONTEXTUALIZE: bool = Field(
        default=True,
        description="Write an LLM blurb situating each chunk in its document once the file is "
        "searchable, and index the chunk again with it (Contextual Retrieval).",
    )
    INGEST_BATCH_SIZE: int = Field(
        default=200, ge=1, le=1000, description="Most files one sensor-launched run ingests."
    )
    INGEST_BATCH_BYTES: int = Field(
        default=8 * 1024 * 1024,
        ge=1,
        description="Most bytes of files one sensor- or API-launched ingest run takes "
        "(a larger file gets a run of its own): bounds a run worker's memory, about "
        "20 MiB per MiB of text.",
    )
    MAX_FILE_BYTES: int = Field(
        default=50 * 1024 * 1024,
        ge=1,
        description="Largest document file taken in; a larger one is refused by name, with "
        "the limit in the message.",
    )
    FOLDER_WATCH: bool = Field(
        default=True,
        description="The API watches DOCS_PATH (inotify) and launches a landed file's "
        "ingest run at once; off, files dropped in the folder wait for the folder "
        "sensor's next tick (uploads still launch theirs). One API process should watch.",
    )

    # --- retrieval --------------------------------------------------------
    RETRIEVAL_METHOD: RetrievalMethod = Field(
        default="hybrid",
        description="semantic, bm25, hybrid, reranked (a base method's candidates rescored "
        "over /v1/rerank) or hyde (an LLM-written passage steers the dense arm).",
    )
    SEMANTIC_WEIGHT: float = Field(
        default=0.4,
        ge=0.0,
        le=1.0,
        description="Weight of the dense arm in hybrid fusion; with BM25_WEIGHT it sums to 1.",
    )
    BM25_WEIGHT: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="Weight of the BM25 arm in hybrid fusion; with SEMANTIC_WEIGHT it sums to 1.",
    )
    TOP_K: int = Field(default=5, ge=1, le=100, description="Evidence passages per answer.")
    RERANK_ENABLED: bool = Field(
        default=True, description="Kill switch: false makes `reranked` return its base ranking."
    )
    RERANK_BASE_METHOD: BaseMethod = Field(
        default="hybrid", description="The method whose candidates `reranked` rescores."
    )
    RERANK_CANDIDATES: int = Field(
        default=40, ge=1, le=1000, description="Candidates the base method over-fetches."
    )
    RERANK_TOP_N: int = Field(default=20, ge=1, le=1000, description="Most results kept.")
    RERANK_BASE_URL: str | None = Field(
        default=None,
        description="A /v1/rerank server (infinity, TEI, llama.cpp --reranking); unset uses "
        "the local embedding-similarity reranker, which is not a cross-encoder.",
    )
    RERANK_MODEL: str = Field(
        default="embedding-similarity",
        description="Model name sent to the rerank server (RERANK_BASE_URL).",
    )
    RERANK_API_KEY: str = Field(
        default="sk-local", description="Bearer token sent to the rerank server."
    )
    HYDE_ENABLED: bool = Field(
        default=True, description="Kill switch: false makes `hyde` search with the raw query."
    )
    HYDE_BASE_METHOD: HydeBaseMethod = Field(
        default="hybrid",
        description="The method `hyde` searches with, its dense arm steered by the passage.",
    )
    HYDE_MAX_TOKENS: int = Field(
        default=160,
        ge=16,
        le=2048,
        description="Longest hypothetical passage `hyde` asks the model for, in tokens.",
    )
    ARM_CANDIDATES: int = Field(
        default=40, ge=1, le=1000, description="Chunks each hybrid arm contributes to fusion."
    )
    RRF_K: int = Field(
        default=10,
        ge=0,
        le=1000,
        description="Reciprocal-rank fusion constant: an arm's rank-r chunk adds "
        "weight / (RRF_K + r); 0 lets one arm's first hit dominate, 60 flattens the lists.",
    )

    # --- chat ---------------------------------------------------------------
    CHAT_ENGINE: ChatEngineName = Field(
        default="simple",
        description="simple searches with the question as asked; condense_context first "
        "asks the model what a follow-up is about and appends that name to the search.",
    )
    CONDENSE_ENABLED: bool = Field(
        default=True, description="Kill switch: false makes condense_context search verbatim."
    )
    CONDENSE_MAX_TOKENS: int = Field(
        default=96,
        ge=8,
        le=1024,
        description="Longest reply condense_context takes from the model for what a "
        "follow-up is about, in tokens.",
    )
    CHAT_HISTORY_TURNS: int = Field(
        default=6, ge=0, le=50, description="Earlier turns the chat engine sees."
    )

    # --- services (embedded stack) -----------------------------------------
    HOST: str = Field(
        default="127.0.0.1",
        description="Address the API and the Dagster UI's front listen on; beyond loopback, "
        "set API_KEY (and ALLOWED_HOSTS for the names you use).",
    )
    API_PORT: int = Field(
        default=8000, ge=1, le=65535, description="Port of the API and the web client."
    )
    DAGSTER_PORT: int = Field(
        default=3000, ge=1, le=65535, description="Port of the Dagster UI's guarded front."
    )
    LLM_PORT: int = Field(
        default=8091, ge=1, le=65535, description="Port of the local chat server (loopback)."
    )
    EMBEDDING_PORT: int = Field(
        default=8092,
        ge=1,
        le=65535,
        description="Port of the local embeddings server (loopback).",
    )
    GRAPH_READER_PORT: int = Field(
        default=8093,
        ge=1,
        le=65535,
        description="Port of the local graph reader's chat server (loopback; GRAPH_READER_LLM).",
    )
    DAGSTER_URL: str | None = Field(
        default=None,
        description="The Dagster UI's guarded front (what people open, and what the API, "
        "CLI and doctor call with API_KEY); defaults to http://HOST:DAGSTER_PORT.",
    )
    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Log level of every Varagity process."
    )

    # --- access -----------------------------------------------------------
    API_KEY: str | None = Field(
        default=None,
        description="Bearer token (Authorization: Bearer ...) every API route but health and "
        "metrics requires when set; required when HOST is not a loopback address.",
    )
    METRICS_API_KEY: str | None = Field(
        default=None,
        description="Bearer token /api/health and /metrics require when set (API_KEY is "
        "accepted there too); unset, they stay open to probes and scrapers.",
    )
    ALLOWED_HOSTS: str = Field(
        default="",
        description="Comma-separated extra Host names the API answers to besides 127.0.0.1, "
        "localhost and HOST (DNS-rebinding guard); '*' turns the check off.",
    )

    # --- message graph ------------------------------------------------------
    GRAPH_ENABLED: bool = Field(
        default=True,
        description="Kill switch: false refuses every graph build and read (graph_disabled) "
        "and a graph-targeted chat turn answers from the documents instead.",
    )
    GRAPH_ENGINE: GraphEngineName = Field(
        default="lightrag",
        description="The message-graph engine (docs/graph.md); its working directory is "
        "GRAPH_STORAGE_PATH/<engine>.",
    )
    GRAPH_DOCS_PATH: Path = Field(
        default=Path("graph-docs"),
        description="The watched folder of message archives (an iMessage chat.db with its "
        "-wal/-shm), beside DOCS_PATH.",
    )
    GRAPH_MAX_ARCHIVE_BYTES: int = Field(
        default=4 * 1024**3,
        ge=1,
        description="Largest file of a message archive an upload takes (a chat.db and its "
        "-wal reach gigabytes; MAX_FILE_BYTES is the documents' limit).",
    )
    GRAPH_STORAGE_PATH: Path | None = Field(
        default=None,
        description="Where graph engines keep their working directories; defaults to "
        "VARAGITY_HOME/graph.",
    )
    GRAPH_CHUNK_TOKENS: int = Field(
        default=1200,
        ge=64,
        le=8192,
        description="Transcript chunk the engine extracts from in one LLM call, in cl100k "
        "tokens; with the extraction prompt (~1,700 tokens) and GRAPH_EXTRACT_MAX_TOKENS "
        "it must fit LLM_CONTEXT_TOKENS (a build refuses to start otherwise).",
    )
    GRAPH_EXTRACT_MAX_TOKENS: int = Field(
        default=1024,
        ge=64,
        le=8192,
        description="Cap on one extraction (or description summary) reply, in tokens.",
    )
    GRAPH_EXTRACT_FORMAT: Literal["json", "json_object", "json_schema", "text"] = Field(
        default="json",
        description="How the model writes what it extracts: json is LightRAG's JSON prompt, "
        "read leniently; json_object adds response_format json_object and json_schema its "
        "schema too (a grammar the reply must follow on llama.cpp: valid, but several "
        "times slower on CPU with a 150k-token vocabulary); text is LightRAG's delimited "
        "lines (the 0.5B model cannot write them).",
    )
    GRAPH_EXTRACTION: Literal["skeleton", "model"] = Field(
        default="skeleton",
        description="What a graph build extracts from each transcript day: skeleton, "
        "without a model, the day's writers, the day and the names its messages write "
        "(about a second a day: a year of chats in minutes); model, the chat model's "
        "entities and relations (LightRAG's prompt: 15-25 s a day for the 0.5B model on 2 "
        "cores, for answers no better; worth it with a stronger model). Applies to days "
        "built from then on.",
    )
    GRAPH_QUERY_MODE: GraphQueryMode = Field(
        default="mix",
        description="Engine retrieval mode: local (entities), global (relations), hybrid "
        "(both), mix (both plus transcript vector search), naive (transcripts only).",
    )
    GRAPH_QUERY_KEYWORDS: Literal["question", "llm"] = Field(
        default="question",
        description="What the engine searches its entity and relation indexes with: the "
        "question as asked (no model call), or keywords the chat model extracts first "
        "(one more LLM call per question; better with a strong model).",
    )
    GRAPH_TOP_K: int = Field(
        default=20,
        ge=1,
        le=200,
        description="Entities (and relations) graph retrieval takes per question.",
    )
    GRAPH_CHUNK_TOP_K: int = Field(
        default=5,
        ge=1,
        le=100,
        description="Transcript chunks (day cards) graph retrieval returns per question.",
    )
    GRAPH_DAY_CANDIDATES: int = Field(
        default=15,
        ge=1,
        le=200,
        description="Day cards graph retrieval asks the engine for, and days it adds "
        "that the messages of the whole archive find best, before ranking them all again "
        "by their messages and keeping GRAPH_CHUNK_TOP_K (fewer: faster, and the first "
        "days of either ranking only).",
    )
    GRAPH_EXCHANGE_MIN_SCORE: float = Field(
        default=3.0,
        ge=0.0,
        le=3.0,
        description="Graph answers: least score (of at most 2: the share of the question's "
        "words plus the meaning's cosine) of the best message for it to be the answer, "
        "quoted with its reply, even when the reading names none of its words (not when "
        "it finds no answer there); above 2 (the default) only a reading quotes it.",
    )
    GRAPH_EXCHANGE_READ_SCORE: float = Field(
        default=0.95,
        ge=0.0,
        le=3.0,
        description="Graph answers: least score of the best message for the reader "
        "(GRAPH_READER_LLM) to read it and its reply first (one short call): when it finds "
        "no answer there the turn abstains, offering those messages; when it names their "
        "words they are the answer; otherwise the chat model answers from the day cards. "
        "Above 2 nothing is read.",
    )
    GRAPH_READER_LLM: Literal["chat", LocalLlmName] = Field(
        default="qwen2.5-coder-1.5b",
        description="Graph answers: the model that reads the best message and its reply "
        "(GRAPH_EXCHANGE_READ_SCORE): a packaged model the stack serves on "
        "GRAPH_READER_PORT, or chat for the chat model. The chat model reads as well when "
        "this names LOCAL_LLM, and when LLM_BASE_URL is set and GRAPH_READER_BASE_URL not.",
    )
    GRAPH_READER_BASE_URL: str | None = Field(
        default=None,
        description="OpenAI-compatible server of the graph reader (served as "
        "GRAPH_READER_LLM's alias); unset starts the local one (GRAPH_READER_LLM).",
    )
    GRAPH_TIMEZONE: str = Field(
        default="",
        description="IANA time zone (e.g. Europe/Lisbon) in which message-graph transcripts "
        "split into days; blank is this machine's local zone.",
    )

    GRAPH_OWNER_NAME: str = Field(
        default="",
        max_length=100,
        description="Your name in the message graph: transcripts write your own messages "
        "under it instead of 'Me', so questions that name you find them; blank keeps 'Me'. "
        "The next build of each archive re-extracts the days you wrote in.",
    )

    @field_validator("GRAPH_TIMEZONE")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        value = value.strip()
        if value:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(
                    f"GRAPH_TIMEZONE {value!r} is not a known IANA time zone "
                    "(e.g. Europe/Lisbon, America/New_York, UTC)"
                ) from None
        return value

    @field_validator(
        "DATABASE_URL",
        "ELASTICSEARCH_URL",
        "LLM_BASE_URL",
        "EMBEDDING_BASE_URL",
        "GRAPH_READER_BASE_URL",
        "RERANK_BASE_URL",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
    )
    @classmethod
    def _blank_is_unset(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        return value.strip().rstrip("/")

    @field_validator("API_KEY", "METRICS_API_KEY")
    @classmethod
    def _blank_key_is_unset(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("DATABASE_URL")
    @classmethod
    def _postgres_scheme(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                "DATABASE_URL must be a postgresql:// URL (e.g. postgresql://user:pw@host:5432/db)"
            )
        return value

    @field_validator(
        "ELASTICSEARCH_URL",
        "LLM_BASE_URL",
        "EMBEDDING_BASE_URL",
        "GRAPH_READER_BASE_URL",
        "DAGSTER_URL",
        "RERANK_BASE_URL",
    )
    @classmethod
    def _http_scheme(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http(s):// URL")
        return value

    @model_validator(mode="after")
    def _llm_model_default(self) -> Settings:
        if not self.LLM_MODEL.strip():
            self.LLM_MODEL = LOCAL_MODELS[self.LOCAL_LLM].alias
            # derived, not set: settings_env leaves it out and children derive it alike
            self.__pydantic_fields_set__.discard("LLM_MODEL")
        return self

    @model_validator(mode="after")
    def _cross_checks(self) -> Settings:
        total = self.SEMANTIC_WEIGHT + self.BM25_WEIGHT
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"SEMANTIC_WEIGHT + BM25_WEIGHT must sum to 1.0 (got {self.SEMANTIC_WEIGHT} + "
                f"{self.BM25_WEIGHT} = {total:g})"
            )
        if self.CHUNK_OVERLAP >= self.CHUNK_SIZE:
            raise ValueError(
                f"CHUNK_OVERLAP ({self.CHUNK_OVERLAP}) must be smaller than CHUNK_SIZE "
                f"({self.CHUNK_SIZE})"
            )
        if self.DOCS_PATH.exists() and not self.DOCS_PATH.is_dir():
            raise ValueError(f"DOCS_PATH {self.DOCS_PATH} exists but is not a directory")
        if self.VARAGITY_HOME.exists() and not self.VARAGITY_HOME.is_dir():
            raise ValueError(f"VARAGITY_HOME {self.VARAGITY_HOME} exists but is not a directory")
        if self.RERANK_TOP_N > self.RERANK_CANDIDATES:
            raise ValueError(
                f"RERANK_TOP_N ({self.RERANK_TOP_N}) cannot exceed RERANK_CANDIDATES "
                f"({self.RERANK_CANDIDATES}): the reranker only sees that many"
            )
        if self.STEP_EXECUTOR == "celery" and not self.CELERY_BROKER_URL:
            raise ValueError("STEP_EXECUTOR=celery needs CELERY_BROKER_URL (redis://host:6379/0)")
        if self.STEP_EXECUTOR == "celery" and self.ARTIFACT_STORE != "postgres":
            raise ValueError(
                "STEP_EXECUTOR=celery runs a run's steps on several hosts: set "
                "ARTIFACT_STORE=postgres so each step finds what the one before it stored"
            )
        listening = ["API_PORT", "DAGSTER_PORT", "LLM_PORT", "EMBEDDING_PORT"]
        if self.local_reader:
            listening.append("GRAPH_READER_PORT")
        if len({getattr(self, name) for name in listening}) != len(listening):
            *first, last = listening
            raise ValueError(f"{', '.join(first)} and {last} must all differ")
        if self.API_KEY is None and not is_loopback(self.HOST):
            raise ValueError(
                f"HOST={self.HOST} is reachable beyond this machine, so API_KEY is required: "
                "set API_KEY to a long random secret (e.g. `openssl rand -hex 32`), or bind "
                "HOST=127.0.0.1"
            )
        return self

    # --- backups ------------------------------------------------------------
    BACKUP_SCHEDULE: str = Field(
        default="",
        description="Cron expression (5 fields, UTC, e.g. '0 3 * * *') at which Dagster "
        "exports every enabled corpus into its varagity-exports/ folder; blank: no schedule "
        "(export from the UI, the API, the CLI or the web client). Read at start-up.",
    )

    @field_validator("BACKUP_SCHEDULE")
    @classmethod
    def _cron(cls, value: str) -> str:
        value = " ".join(value.split())
        if value and (len(value.split(" ")) != 5 or not re.fullmatch(r"[0-9A-Za-z*/,\- ]+", value)):
            raise ValueError(
                f"BACKUP_SCHEDULE {value!r} is not a 5-field cron expression "
                "(minute hour day-of-month month day-of-week, e.g. '0 3 * * *'); leave it blank "
                "for no schedule"
            )
        return value

    # --- derived ------------------------------------------------------------
    @property
    def home(self) -> Path:
        """Absolute state folder."""
        return self.VARAGITY_HOME.expanduser().resolve()

    @property
    def docs_path(self) -> Path:
        """Absolute corpus folder."""
        return self.DOCS_PATH.expanduser().resolve()

    @property
    def model_cache_path(self) -> Path:
        """Absolute model cache folder."""
        return self.MODEL_CACHE_PATH.expanduser().resolve()

    @property
    def bm25_path(self) -> Path:
        """Absolute Tantivy index directory."""
        return (self.BM25_INDEX_PATH or self.home / "bm25").expanduser().resolve()

    @property
    def graph_docs_path(self) -> Path:
        """Absolute folder of message archives."""
        return self.GRAPH_DOCS_PATH.expanduser().resolve()

    @property
    def graph_storage_path(self) -> Path:
        """Absolute folder of the graph engines' working directories."""
        return (self.GRAPH_STORAGE_PATH or self.home / "graph").expanduser().resolve()

    @property
    def dagster_url(self) -> str:
        """Where the Dagster UI and its GraphQL answer: the webserver's guarded front."""
        return self.DAGSTER_URL or f"http://{self.HOST}:{self.DAGSTER_PORT}"

    @property
    def llm_url(self) -> str:
        """Base URL (ending in /v1) of the chat model server."""
        return self.LLM_BASE_URL or f"http://{self.HOST}:{self.LLM_PORT}/v1"

    @property
    def reader_url(self) -> str | None:
        """Base URL (ending in /v1) of the graph reader's chat server; None when the chat
        model reads (GRAPH_READER_LLM names it or ``chat``, or the chat server is the
        operator's and no reader's is named)."""
        if self.GRAPH_READER_LLM == "chat":
            return None
        if self.GRAPH_READER_BASE_URL is not None:
            return self.GRAPH_READER_BASE_URL
        if self.LLM_BASE_URL is not None or self.GRAPH_READER_LLM == self.LOCAL_LLM:
            return None
        return f"http://{self.HOST}:{self.GRAPH_READER_PORT}/v1"

    @property
    def local_reader(self) -> bool:
        """Whether the stack serves the graph reader itself (on GRAPH_READER_PORT)."""
        return self.reader_url is not None and self.GRAPH_READER_BASE_URL is None

    @property
    def embedding_url(self) -> str:
        """Base URL (ending in /v1) of the embedding server."""
        return self.EMBEDDING_BASE_URL or f"http://{self.HOST}:{self.EMBEDDING_PORT}/v1"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address to bind) only reaches this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def settings_env(settings: Settings) -> dict[str, str]:
    """The explicitly set values in environment-string form, for child processes."""
    env: dict[str, str] = {}
    for name in sorted(settings.model_fields_set):
        value = getattr(settings, name)
        if value is None:
            continue
        env[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return env


def render_env_example() -> str:
    """The text of ``.env.example``: every setting, its description and its default."""
    lines = [
        "# Varagity settings. Copy to .env and uncomment what you change; the defaults run",
        "# the embedded stack (embedded Postgres + pgvector, Tantivy BM25, local model servers).",
        "# Regenerate with `make env-example` after adding a setting.",
    ]
    for name, field in Settings.model_fields.items():
        default = field.default
        shown = (
            ""
            if default is None
            else str(default).lower()
            if isinstance(default, bool)
            else default
        )
        lines.append("")
        if field.description:
            lines.append(f"# {field.description}")
        lines.append(f"# {name}={shown}")
    return "\n".join(lines) + "\n"


class SettingsError(RuntimeError):
    """Raised when the configuration does not validate; the message names each bad field."""


def load_settings(**overrides: object) -> Settings:
    """Build and validate settings, turning pydantic's report into one readable message."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "settings"
            lines.append(f"  {where}: {err['msg']}")
        raise SettingsError("Invalid Varagity settings:\n" + "\n".join(lines)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; call :func:`reset_settings` after changing env)."""
    return load_settings()


def reset_settings() -> None:
    """Forget the cached settings so the next :func:`get_settings` re-reads the environment."""
    get_settings.cache_clear()
