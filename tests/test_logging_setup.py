"""One logging setup for every process: :func:`varagity.logging_setup.configure_logging`.

Each check runs in a fresh interpreter: logging is process-wide state, and this one's
belongs to pytest.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from varagity.logging_setup import OWN_LOGGERS

REPO = Path(__file__).resolve().parents[1]
CONFIGURED = (
    "import logging; root = logging.getLogger(); "
    "print('configured' if getattr(root, '_varagity_configured', False) else 'not configured')"
)


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )


def test_verbosity_2_opens_this_projects_loggers_to_debug_and_closes_them_again() -> None:
    done = _python(
        "import logging\n"
        "from varagity.logging_setup import configure_logging\n"
        "configure_logging('INFO', verbose=2)\n"
        "logging.getLogger('varagity.retrieval.hybrid').debug('own debug')\n"
        "logging.getLogger('varagity_stack.dagster_front').debug('stack debug')\n"
        "logging.getLogger('httpx').info('library info')\n"
        "logging.getLogger('elsewhere').debug('library debug')\n"
        "logging.getLogger('elsewhere').info('library info kept')\n"
        "configure_logging('INFO', verbose=1)\n"
        "logging.getLogger('varagity.retrieval.hybrid').debug('closed again')\n"
        "logging.getLogger('varagity.retrieval.hybrid').info('info still')\n"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(line.endswith(" DEBUG varagity.retrieval.hybrid: own debug") for line in lines)
    assert any(line.endswith(" DEBUG varagity_stack.dagster_front: stack debug") for line in lines)
    assert any(line.endswith(" INFO elsewhere: library info kept") for line in lines)
    assert any(line.endswith(" INFO varagity.retrieval.hybrid: info still") for line in lines)
    assert not any(line.endswith(" INFO httpx: library info") for line in lines)  # quieted
    for absent in ("library debug", "closed again"):
        assert absent not in done.stderr, done.stderr


def test_nothing_but_logging_setup_calls_basic_config() -> None:
    """A process that configured logging itself would drift from the others (format,
    quieted libraries, verbosity 2)."""
    callers = []
    for package in OWN_LOGGERS:  # this project's packages
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr == "basicConfig":
                    callers.append(str(path.relative_to(REPO)))
    assert callers == ["varagity/logging_setup.py"]


def test_the_embedding_server_and_the_dagster_front_use_the_shared_setup() -> None:
    # the embedding server configures logging before it loads a model: an unknown one
    # ends it right after, without serving
    embedding = _python(
        "from varagity_stack.embedding_server import main\n"
        "try:\n"
        "    main(['--model', 'no-such-model', '--log-level', 'warning'])\n"
        "except SystemExit as exc:\n"
        "    print(exc)\n"
        "import logging\n"
        "print(logging.getLevelName(logging.getLogger().level))\n"
        "print(logging.getLevelName(logging.getLogger('httpx').level))\n" + CONFIGURED
    )
    assert embedding.returncode == 0, embedding.stderr
    assert "unknown embedding model 'no-such-model'" in embedding.stdout
    assert embedding.stdout.splitlines()[1:] == ["WARNING", "WARNING", "configured"]

    # the front: everything up to serving, with uvicorn.run recording instead of serving
    front = _python(
        "import uvicorn\n"
        "uvicorn.run = lambda app, **kw: print('served at', kw['log_level'])\n"
        "from varagity_stack.dagster_front import main\n"
        "main(['--upstream', 'http://127.0.0.1:9'])\n" + CONFIGURED,
        env={**os.environ, "LOG_LEVEL": "DEBUG"},
    )
    assert front.returncode == 0, front.stderr
    assert front.stdout.splitlines() == ["served at debug", "configured"]
    # the shared format
    assert " INFO varagity_stack.dagster_front: Dagster UI front on " in front.stderr
