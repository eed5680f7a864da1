"""Source code cut at function and class boundaries with a tree-sitter parse.

The grammars come pre-compiled inside the ``tree-sitter-language-pack`` wheel (the 0.x
line; 1.x fetches them at run time, which an offline install cannot). A file is parsed
once and split the way the cAST paper (Zhang et al., 2025, "cAST: Enhancing Code
Retrieval-Augmented Generation with Structural Chunking via Abstract Syntax Tree")
describes: the children of a node are packed greedily into chunks of at most
``chunk_size`` characters, whole; a child that does not fit on its own is split the
same way one level down (a class into its methods, a function into its statements),
and only a node with no structure left (a long string, a macro the grammar could not
parse) falls back to :func:`~varagity.chunking.recursive_character.split_recursive`.
Comments, attributes and decorators stay with the definition that follows them.

Every chunk knows the definitions that enclose it (``impl Executor for DiffExecutor >
fn run_target``): its *symbol path*, which the deterministic header carries. Offsets
are character offsets into the text (tree-sitter works in UTF-8 bytes; they are mapped
back), so ``text[start:end] == chunk.text`` holds for every chunk.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from varagity.chunking.base import ChunkSpan
from varagity.chunking.recursive_character import split_recursive

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

log = logging.getLogger(__name__)

#: File suffix -> tree-sitter-language-pack grammar name.
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".rs": "rust",
    ".c": "c",
    # C headers are parsed as C++: the C++ grammar reads C declarations too, and
    # C++ headers (classes, templates, namespaces) are common under ``.h``.
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".java": "java",
    ".kt": "kotlin",
    ".scala": "scala",
    ".go": "go",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".swift": "swift",
    ".js": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".sh": "bash",
    ".bash": "bash",
}

# Node kinds that name a scope a reader would cite: the first word of the node type
# (``function_item`` -> ``function``) when the type ends in one of _DEF_SUFFIXES.
_DEF_WORDS = frozenset(
    "function method constructor class struct impl trait enum interface namespace mod "
    "module union record object protocol extension".split()
)
_DEF_SUFFIXES = ("_item", "_definition", "_declaration", "_specifier")
# What a label calls a kind, where the language has its own word for it.
_KIND_WORDS = {
    ("rust", "function"): "fn",
    ("python", "function"): "def",
    ("go", "function"): "func",
    ("go", "method"): "func",
}
# Nodes that belong to the definition after them (doc comments, attributes, decorators).
_LEADING = ("comment", "attribute_item", "attribute", "annotation", "decorator")
_NAME_FIELDS = ("name", "declarator")
_MAX_LABEL = 80
#: Chunks shorter than this share of ``chunk_size`` are merged into a neighbour.
MIN_SHARE = 0.2
_WS = re.compile(r"\s+")


def _strip_generics(name: str) -> str:
    """``DiffExecutor<A, B>`` -> ``DiffExecutor`` (type arguments only lengthen a label)."""
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out) if depth == 0 else name


class CodeParseError(RuntimeError):
    """The grammar is not available or the parser failed on the text."""


@dataclass(frozen=True, slots=True)
class _Piece:
    """A span of the text (character offsets) and the scopes enclosing it."""

    start: int
    end: int
    scope: tuple[str, ...]
    leading: bool = False  # comments/attributes of the next definition: merge forward


def language_for(path: str | None) -> str | None:
    """The grammar name for a file path (by suffix), or None for prose and unknown files."""
    if not path:
        return None
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


@lru_cache(maxsize=32)
def _parser(language: str) -> Parser:
    try:
        from tree_sitter_language_pack import get_parser
    except ImportError as exc:  # pragma: no cover - packaging error
        raise CodeParseError(
            "tree-sitter-language-pack is not installed: pip install 'tree-sitter-language-pack<1'"
        ) from exc
    try:
        return get_parser(language)  # type: ignore[arg-type]
    except Exception as exc:  # LookupError, or a download attempt of the 1.x line
        raise CodeParseError(f"no tree-sitter grammar for {language!r}: {exc}") from exc


class _Offsets:
    """UTF-8 byte offsets to character offsets (identity for ASCII text)."""

    def __init__(self, text: str, data: bytes) -> None:
        self._ascii = len(text) == len(data)
        if not self._ascii:
            starts = []
            pos = 0
            for ch in text:
                starts.append(pos)
                pos += len(ch.encode("utf-8"))
            starts.append(pos)
            self._starts = starts

    def char(self, byte: int) -> int:
        if self._ascii:
            return byte
        return bisect.bisect_left(self._starts, byte)


class _Splitter:
    def __init__(self, text: str, language: str, size: int, overlap: int) -> None:
        self.text = text
        self.language = language
        self.size = size
        self.overlap = overlap
        self.data = text.encode("utf-8")
        self.offsets = _Offsets(text, self.data)

    # ------------------------------------------------------------------ labels

    def _node_text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def _name(self, node: Node) -> str | None:
        if node.type == "impl_item":  # Rust: impl Trait for Type
            typ = node.child_by_field_name("type")
            trait = node.child_by_field_name("trait")
            if typ is None:
                return None
            name = self._node_text(typ)
            return f"{self._node_text(trait)} for {name}" if trait is not None else name
        current: Node | None = node
        for _ in range(8):  # C/C++ declarators nest: pointer -> function -> identifier
            if current is None:
                return None
            inner = None
            for field in _NAME_FIELDS:
                inner = current.child_by_field_name(field)
                if inner is not None:
                    break
            if inner is None:
                return self._node_text(current) if current is not node else None
            if inner.child_by_field_name("declarator") is None and inner.type != "ERROR":
                if inner.type in ("parameter_list", "parameters"):
                    return None
                return self._node_text(inner)
            current = inner
        return None

    def label(self, node: Node) -> str | None:
        """``fn run_target`` / ``class Foo`` for a definition node, else None."""
        kind = node.type
        if not kind.endswith(_DEF_SUFFIXES):
            return None
        word = kind.split("_", 1)[0]
        if word not in _DEF_WORDS:
            return None
        name = self._name(node)
        if not name:
            return None
        name = _WS.sub(" ", _strip_generics(name)).strip()
        if len(name) > _MAX_LABEL:
            name = name[: _MAX_LABEL - 1] + "…"
        return f"{_KIND_WORDS.get((self.language, word), word)} {name}"

    # ------------------------------------------------------------------ splitting

    def _groups(self, node: Node) -> Iterator[list[Node]]:
        """Children of ``node``, leading comments/attributes glued to what follows."""
        pending: list[Node] = []
        for child in node.children:
            if child.end_byte <= child.start_byte:
                continue  # zero-width (MISSING) nodes
            if child.type.endswith(_LEADING) and child.type != "ERROR":
                pending.append(child)
                continue
            yield [*pending, child]
            pending = []
        if pending:
            yield pending

    def _span(self, start_byte: int, end_byte: int) -> tuple[int, int]:
        return self.offsets.char(start_byte), self.offsets.char(end_byte)

    def _fallback(self, start: int, end: int, scope: tuple[str, ...]) -> list[_Piece]:
        pieces = split_recursive(self.text[start:end], self.size, self.overlap)
        return [_Piece(start + p.char_start, start + p.char_end, scope) for p in pieces]

    def split_node(self, node: Node, scope: tuple[str, ...]) -> list[_Piece]:
        """Chunks of ``node``'s children, packed whole, oversize ones split further."""
        out: list[_Piece] = []
        current: _Piece | None = None
        for group in self._groups(node):
            start, end = self._span(group[0].start_byte, group[-1].end_byte)
            if end - start <= self.size:
                if current is not None and end - current.start <= self.size:
                    current = _Piece(current.start, end, current.scope)
                else:
                    if current is not None:
                        out.append(current)
                    current = _Piece(start, end, scope)
                continue
            inner = self._split_group(group, scope)
            if current is not None:
                # a short run before the split (``impl X for Y {``) opens its first chunk
                if inner and inner[0].end - current.start <= self.size:
                    inner[0] = _Piece(current.start, inner[0].end, inner[0].scope)
                else:
                    out.append(current)
                current = None
            out.extend(inner)
        if current is not None:
            out.append(current)
        return out

    def _split_group(self, group: Sequence[Node], scope: tuple[str, ...]) -> list[_Piece]:
        """An oversize group: leading comments, then its last node split one level down."""
        *leading, node = group
        if node.type == "ERROR" or not node.children:
            start, _ = self._span(group[0].start_byte, node.start_byte)
            n_start, n_end = self._span(node.start_byte, node.end_byte)
            return self._fallback(min(start, n_start), n_end, scope)
        n_start, n_end = self._span(node.start_byte, node.end_byte)
        if n_end - n_start <= self.size:
            inner = [_Piece(n_start, n_end, scope)]
        else:
            label = self.label(node)
            inner = self.split_node(node, (*scope, label) if label else scope)
        if not leading:
            return inner
        lead_start, lead_end = self._span(leading[0].start_byte, leading[-1].end_byte)
        if inner and inner[0].end - lead_start <= self.size:
            first = inner[0]
            return [_Piece(lead_start, first.end, first.scope), *inner[1:]]
        if lead_end - lead_start <= self.size:
            return [_Piece(lead_start, lead_end, scope, leading=True), *inner]
        return [*self._fallback(lead_start, lead_end, scope), *inner]


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _merge_small(pieces: list[_Piece], size: int) -> list[_Piece]:
    """Fold pieces under ``MIN_SHARE * size`` into a neighbour they fit with (left first)."""
    small = int(size * MIN_SHARE)
    out: list[_Piece] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if piece.end - piece.start < small:
            fits_left = bool(out) and piece.end - out[-1].start <= size
            fits_right = i + 1 < len(pieces) and pieces[i + 1].end - piece.start <= size
            if fits_right and (piece.leading or not fits_left):
                nxt = pieces[i + 1]
                piece = _Piece(
                    piece.start,
                    nxt.end,
                    nxt.scope if piece.leading else _common(piece.scope, nxt.scope),
                )
                i += 1
            elif fits_left:
                prev = out.pop()
                piece = _Piece(prev.start, piece.end, _common(prev.scope, piece.scope))
        out.append(piece)
        i += 1
    return out


def split_code(text: str, language: str, chunk_size: int, chunk_overlap: int) -> list[ChunkSpan]:
    """Split source code at syntax boundaries.

    Args:
        text: The file's text.
        language: A tree-sitter-language-pack grammar name (see :data:`LANGUAGES`).
        chunk_size: Most characters per chunk.
        chunk_overlap: Overlap used only where a node without structure is cut by lines.

    Returns:
        The chunks in order, each with ``symbol_path`` set when definitions enclose it.

    Raises:
        CodeParseError: No grammar for ``language``, or the parser failed.
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"chunk_overlap must be in [0, chunk_size), got {chunk_overlap}")
    parser = _parser(language)
    splitter = _Splitter(text, language, chunk_size, chunk_overlap)
    try:
        tree = parser.parse(splitter.data)
    except Exception as exc:
        raise CodeParseError(f"tree-sitter failed to parse {language} text: {exc}") from exc
    chunks: list[ChunkSpan] = []
    pieces = _merge_small(splitter.split_node(tree.root_node, ()), chunk_size)
    for piece in pieces:
        raw = text[piece.start : piece.end]
        body = raw.strip()
        if not body:
            continue
        start = piece.start + len(raw) - len(raw.lstrip())
        path = " > ".join(piece.scope) or None
        chunks.append(ChunkSpan(body, start, start + len(body), symbol_path=path))
    return chunks
