"""Identifier expansion and query sanitizing shared by the BM25 backends."""

from __future__ import annotations

import pytest

from varagity.stores.bm25.analysis import (
    ENGLISH_STOPWORDS,
    expand_identifiers,
    identifier_subwords,
    query_terms,
    sanitize_query,
    search_text,
    split_identifier,
)


def test_brief_example_keeps_originals_and_appends_subwords() -> None:
    text = "DiffExecutor run_target HTTPServer2"
    assert expand_identifiers(text) == (
        "DiffExecutor run_target HTTPServer2 Diff Executor run target HTTP Server 2"
    )


@pytest.mark.parametrize(
    ("token", "parts"),
    [
        ("diffExecutor", ["diff", "Executor"]),  # camelCase
        ("DiffExecutor", ["Diff", "Executor"]),  # PascalCase
        ("HTTPServer", ["HTTP", "Server"]),  # acronym then word
        ("parseJSON", ["parse", "JSON"]),  # word then acronym
        ("getHTTPResponseCode", ["get", "HTTP", "Response", "Code"]),
        ("XMLHttpRequest", ["XML", "Http", "Request"]),
        ("run_target", ["run", "target"]),  # snake_case
        ("MAX_RETRY_COUNT", ["MAX", "RETRY", "COUNT"]),  # SCREAMING_SNAKE
        ("kebab-case-name", ["kebab", "case", "name"]),  # kebab-case
        ("HTTPServer2", ["HTTP", "Server", "2"]),  # digits
        ("utf8", ["utf", "8"]),
        ("sha256sum", ["sha", "256", "sum"]),
        ("Vec3D", ["Vec", "3", "D"]),
        ("__init__", ["init"]),  # dunder
        ("os.path.join", ["os", "path", "join"]),  # dotted path
        ("std::vec::Vec", ["std", "vec", "Vec"]),  # Rust/C++ path
        ("plain", ["plain"]),
        ("URL", ["URL"]),
    ],
)
def test_split_identifier(token: str, parts: list[str]) -> None:
    assert split_identifier(token) == parts


def test_plain_text_is_unchanged() -> None:
    text = "The quick brown fox jumps over the lazy dog."
    assert expand_identifiers(text) == text
    assert identifier_subwords(text) == ""


def test_pure_numbers_are_not_expanded() -> None:
    assert identifier_subwords("pi is 3.14 and today is 2024-01-15") == ""


def test_repeated_identifiers_keep_their_frequency() -> None:
    assert identifier_subwords("fooBar x fooBar") == "foo Bar foo Bar"


def test_unicode_identifiers() -> None:
    assert split_identifier("überCool") == ["über", "Cool"]
    assert expand_identifiers("naïve café") == "naïve café"


def test_query_terms_include_expansion() -> None:
    assert query_terms("DiffExecutor") == ["DiffExecutor", "Diff", "Executor"]
    assert query_terms("diff executor") == ["diff", "executor"]


def test_boolean_operators_are_neutralized() -> None:
    assert query_terms("cats AND dogs OR NOT birds") == [
        "cats",
        "and",
        "dogs",
        "or",
        "not",
        "birds",
    ]


NASTY_QUERIES = [
    "",
    "   ",
    "\t\n",
    '"',
    '"unterminated phrase',
    "title:foo",
    "content:",
    ":::",
    "(((",
    ")))",
    "(a OR b",
    "[1 TO",
    "{x",
    "a]",
    "AND",
    "OR OR AND",
    "NOT",
    "*",
    "foo*",
    "*bar",
    "?",
    "~",
    "foo~2",
    "^",
    "boost^10",
    "+must -mustnot",
    "!bang",
    "a && b || c",
    "/regex.*/",
    "\\",
    "\\\\\\",
    "'single'",
    "`backticks`",
    "emoji 🚀 query",
    "NUL\x00byte",
    "a" * 5000,
    "; DROP TABLE chunks; --",
    "<script>alert(1)</script>",
    "%s %d {0}",
]


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_nasty_queries_never_raise(query: str) -> None:
    terms = query_terms(query)
    assert all(t and any(c.isalnum() for c in t) for t in terms)
    cleaned = sanitize_query(query)
    assert cleaned == " ".join(terms)
    for char in "\"():[]{}*?~^+!\\/<>;`'":
        assert char not in cleaned
    expand_identifiers(query)  # must not raise either


def test_empty_queries_have_no_terms() -> None:
    for query in ["", "   ", "***", "(:)", "~^"]:
        assert query_terms(query) == []
        assert sanitize_query(query) == ""


def test_search_text_is_the_contextualized_text_with_identifier_parts() -> None:
    content = "fn run_target(&mut self)"
    ctx = f"File: src/diff.rs\n\n{content}"
    assert search_text(content, ctx) == f"{ctx} diff rs run target"
    # the chunk's words are not repeated when the contextualized text already holds them
    assert search_text(content, ctx).count("run_target") == 1


def test_search_text_adds_the_chunk_when_the_context_lacks_it() -> None:
    assert search_text("DiffExecutor compares", "Fuzzing notes.") == (
        "Fuzzing notes.\n\nDiffExecutor compares Diff Executor"
    )
    assert search_text("plain words", "") == "plain words"


def test_stopwords_are_lucenes_english_list() -> None:
    assert len(ENGLISH_STOPWORDS) == 33
    assert {"the", "of", "is", "what", "how"} & set(ENGLISH_STOPWORDS) == {"the", "of", "is"}
