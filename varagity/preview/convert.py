"""PowerPoint decks to PDF through headless LibreOffice, once per deck version.

The PDF is cached by the deck's content hash, so a deck converts once however many of
its slides are previewed and whatever it is named. LibreOffice runs with a private
profile under the cache folder (``-env:UserInstallation``): it never touches the user's
own profile, and a running desktop LibreOffice cannot swallow the request. Conversions
run one at a time, across threads and processes (a lock file beside the profile),
and are killed after :data:`CONVERT_TIMEOUT_S`.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from varagity.preview.types import PreviewUnavailable

CONVERT_TIMEOUT_S = 120.0
CONVERTER_NAMES = ("soffice", "libreoffice")
CONVERTER_MISSING = (
    "PowerPoint previews need LibreOffice Impress (Debian's libreoffice-impress "
    "package, installed by make install); no soffice on PATH"
)

_CONVERT_LOCK = threading.Lock()


def find_converter() -> str | None:
    """The LibreOffice binary on ``PATH``, if any."""
    for name in CONVERTER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def converted_pdf(cache: Path, data: bytes, digest: str, suffix: str) -> Path:
    """The PDF of a deck, converting it on the first call for this ``digest``.

    Args:
        cache: The preview cache folder (``pdf/`` and ``libreoffice/`` live there).
        data: The deck's bytes (already checked against ``digest``).
        digest: The deck's content hash: the cache key.
        suffix: The deck's suffix (``.pptx``), which tells LibreOffice its format.

    Raises:
        PreviewUnavailable: ``converter_missing`` without LibreOffice,
            ``conversion_failed`` when it fails, produces nothing or times out.
    """
    target = cache / "pdf" / f"{digest}.pdf"
    if target.is_file():
        return target
    binary = find_converter()
    if binary is None:
        raise PreviewUnavailable("converter_missing", CONVERTER_MISSING)
    profile = cache / "libreoffice"
    profile.mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _CONVERT_LOCK, (profile / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():  # another thread or process converted it meanwhile
            return target
        with tempfile.TemporaryDirectory(dir=target.parent) as work:
            source = Path(work) / f"deck{suffix}"
            source.write_bytes(data)
            _run(binary, profile / "profile", source, Path(work))
            produced = Path(work) / "deck.pdf"
            if not produced.is_file() or produced.stat().st_size == 0:
                raise PreviewUnavailable(
                    "conversion_failed", "LibreOffice finished without writing a PDF"
                )
            os.replace(produced, target)
    return target


def _run(binary: str, profile: Path, source: Path, outdir: Path) -> None:
    command = [
        binary,
        f"-env:UserInstallation={profile.resolve().as_uri()}",
        "--headless",
        "--norestore",
        "--nolockcheck",
        "--convert-to",
        "pdf",
        "--outdir",
        str(outdir),
        str(source),
    ]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its helper processes die with it on a timeout
    )
    try:
        output, _ = process.communicate(timeout=CONVERT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise PreviewUnavailable(
            "conversion_failed",
            f"LibreOffice took over {CONVERT_TIMEOUT_S:g} s to convert the deck; stopped",
        ) from None
    if process.returncode != 0:
        lines = output.decode("utf-8", "replace").strip().splitlines()
        raise PreviewUnavailable(
            "conversion_failed",
            f"LibreOffice exited with {process.returncode}: {lines[-1] if lines else 'no output'}",
        )
