"""Text preparation shared by the BM25 backends: what is indexed, identifier expansion,
stop words and query sanitizing.

Both backends index one analysed field, :func:`search_text`: the chunk's
contextualized text (header, blurb, chunk) followed by the sub-words of its compound
identifiers, analysed as lower-cased words without :data:`ENGLISH_STOPWORDS`,
Snowball/Porter-stemmed. One field means one length normalisation and no word counted
twice (the contextualized text already holds the chunk); the stop words are Lucene's
English list, which Elasticsearch's ``english`` analyzer removes too.

Code-heavy corpora are full of identifiers (``DiffExecutor``, ``run_target``,
``HTTPServer2``) that a word tokenizer keeps whole, so a user asking about "diff executor"
would never match them.  :func:`expand_identifiers` appends each identifier's sub-words to
the text while keeping the original token, so both the exact identifier and its parts
match.  It is applied to indexed text *and* to queries, which keeps the two sides in step.

:func:`query_terms` / :func:`sanitize_query` reduce arbitrary user input to plain words, so
quotes, colons, parentheses, ``AND``/``OR``, ``*``, ``~``, ``^`` or unbalanced brackets
can never reach a query parser as syntax.
"""

from __future__ import annotations

import re

__all__ = [
    "ENGLISH_STOPWORDS",
    "expand_identifiers",
    "identifier_subwords",
    "query_terms",
    "sanitize_query",
    "search_text",
    "split_identifier",
]

#: Lucene's English stop words (Elasticsearch's ``_english_``, Tantivy's ``english``).
ENGLISH_STOPWORDS: tuple[str, ...] = tuple(
    "a an and are as at be but by for if in into is it no not of on or such that the "
    "their then there these they this to was will with".split()
)

# An identifier-ish token: word characters (letters, digits, underscore) optionally joined
# by ``-``, ``.`` or ``::`` (kebab-case, dotted paths, C++/Rust paths).
_IDENTIFIER_RE = re.compile(r"\w+(?:(?:[-.]|::)\w+)*")
# Separators inside an identifier: underscores, hyphens, dots, colons.
_SEPARATOR_RE = re.compile(r"[_\-.:]+")
# Plain query words (``\w`` is Unicode-aware; the underscore is kept so ``run_target``
# still matches the exact token where an analyzer keeps it whole).
_WORD_RE = re.compile(r"\w+")


def _char_kind(char: str) -> str:
    """Classify a character for hump splitting: ``U``pper, ``L``ower/uncased, ``D``igit."""
    if char.isdigit():
        return "D"
    if char.isupper():
        return "U"
    return "L"


def _split_humps(part: str) -> list[str]:
    """Split one separator-free word at case humps and letter/digit boundaries.

    ``DiffExecutor`` -> ``Diff Executor``; ``HTTPServer2`` -> ``HTTP Server 2``;
    ``parseJSON`` -> ``parse JSON``.  Characters without case (CJK...) count as lowercase.
    """
    if not part:
        return []
    pieces: list[str] = []
    start = 0
    kinds = [_char_kind(c) for c in part]
    for i in range(1, len(part)):
        prev, cur = kinds[i - 1], kinds[i]
        boundary = False
        if (prev == "D") != (cur == "D"):
            # letter <-> digit: Server2, v2, 3D
            boundary = True
        elif prev == "L" and cur == "U":
            # lower -> upper hump: diffExecutor
            boundary = True
        elif prev == "U" and cur == "U" and i + 1 < len(part) and kinds[i + 1] == "L":
            # end of an acronym before a capitalized word: HTTPServer -> HTTP|Server
            boundary = True
        if boundary:
            pieces.append(part[start:i])
            start = i
    pieces.append(part[start:])
    return pieces


def split_identifier(token: str) -> list[str]:
    """Split one identifier into its sub-words.

    Args:
        token: A single identifier such as ``HTTPServer2`` or ``run_target``.

    Returns:
        The sub-words in order (``["HTTP", "Server", "2"]``), or ``[token]`` when the token
        has no inner boundary.
    """
    pieces: list[str] = []
    for part in _SEPARATOR_RE.split(token):
        pieces.extend(_split_humps(part))
    return [p for p in pieces if p] or [token]


def identifier_subwords(text: str) -> str:
    """The sub-words of every compound identifier in ``text``, space-separated.

    Only identifiers that actually split (camel/Pascal humps, acronym boundaries,
    letter/digit boundaries, ``snake_case``, ``kebab-case``, dotted or ``::`` paths, dunder
    names) contribute;
    plain words and pure numbers (``3.14``, ``2024-01-15``) do not.  Repetitions are kept so
    term frequencies stay proportional to the original text.

    Args:
        text: Any text (a chunk or a query).

    Returns:
        The extra sub-words, or ``""`` when the text has no compound identifier.
    """
    extra: list[str] = []
    for match in _IDENTIFIER_RE.finditer(text):
        token = match.group(0)
        if token.isalpha() and (token.islower() or token.isupper() or token.istitle()):
            continue  # a plain word (most of any prose) has no hump to split at
        pieces = split_identifier(token)
        if pieces == [token] or all(p.isdigit() for p in pieces):
            continue
        extra.extend(pieces)
    return " ".join(extra)


def expand_identifiers(text: str) -> str:
    """Return ``text`` followed by the sub-words of its compound identifiers.

    The original tokens are kept so exact identifiers still match; the appended sub-words
    let natural-language queries reach them (and vice versa when applied to queries).

    Example:
        >>> expand_identifiers("DiffExecutor run_target HTTPServer2")
        'DiffExecutor run_target HTTPServer2 Diff Executor run target HTTP Server 2'

    Args:
        text: Text to expand.

    Returns:
        ``text`` unchanged when it holds no compound identifier, else ``text + " " + extra``.
    """
    extra = identifier_subwords(text)
    return f"{text} {extra}" if extra else text


def search_text(content: str, contextualized_content: str) -> str:
    """The one text a BM25 backend analyses for a chunk: context, chunk, identifier parts.

    Args:
        content: The chunk as stored.
        contextualized_content: Header, blurb and chunk (see
            :func:`~varagity.context.contextual.contextualized_text`); when it does not
            hold the chunk (a caller that indexes a bare context) the chunk is added.

    Returns:
        The text with the sub-words of its compound identifiers appended.
    """
    text = (
        contextualized_content
        if content in contextualized_content
        else (f"{contextualized_content}\n\n{content}" if contextualized_content else content)
    )
    return expand_identifiers(text)


def query_terms(query: str) -> list[str]:
    """Reduce free user input to plain words, identifier sub-words included.

    Every query-syntax character (quotes, colons, parentheses, brackets, ``*``, ``~``,
    ``^``, ``+``, ``-``, ``!``, ``/``...) becomes a separator, and the boolean operators
    ``AND``/``OR``/``NOT`` are lowercased so no parser treats them as operators.  Never
    raises.

    Args:
        query: The raw query string.

    Returns:
        The words to search for, in order (possibly empty).
    """
    if not query or not query.strip():
        return []
    terms: list[str] = []
    for word in _WORD_RE.findall(expand_identifiers(query)):
        if not word.strip("_"):
            continue
        if word in {"AND", "OR", "NOT", "TO", "IN"}:
            word = word.lower()
        terms.append(word)
    return terms


def sanitize_query(query: str) -> str:
    """:func:`query_terms` joined with spaces: safe to hand to any match-style query."""
    return " ".join(query_terms(query))
