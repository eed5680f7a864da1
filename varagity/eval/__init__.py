"""Retrieval evaluation: golden suites, the chunker-independent scorer and the runner.

A suite is a folder with ``queries.jsonl`` (questions and their verbatim golden
passages), a corpus (``corpus/`` or the folder ``suite.json`` names) and optionally
``thresholds.json`` (the release gate). :mod:`varagity.eval.scoring` matches passages
by content, so any chunking strategy can be scored against the same suite.
"""
