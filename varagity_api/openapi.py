"""The committed OpenAPI document: render it, write it, or check it for drift.

``python -m varagity_api.openapi`` rewrites ``varagity_api/openapi.json`` from the app;
``--check`` exits 1 when the committed file differs. The web client's TypeScript
types are generated from the committed file, and a test fails on drift.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from varagity_api.main import create_app

COMMITTED = Path(__file__).with_name("openapi.json")


def render_openapi() -> dict[str, Any]:
    """The app's OpenAPI document as a dict (no stores are opened)."""
    return create_app().openapi()


def dumps(document: dict[str, Any]) -> str:
    """The canonical text form: sorted keys, two-space indent, trailing newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the document, or with ``--check`` report drift."""
    parser = argparse.ArgumentParser(prog="python -m varagity_api.openapi")
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    args = parser.parse_args(argv)
    text = dumps(render_openapi())
    if args.check:
        current = COMMITTED.read_text(encoding="utf-8") if COMMITTED.exists() else ""
        if current != text:
            print(f"{COMMITTED} is out of date; run `make openapi` and commit it.", file=sys.stderr)
            return 1
        return 0
    COMMITTED.write_text(text, encoding="utf-8")
    print(f"wrote {COMMITTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
