"""Evaluation: golden suites, the retrieval and answer scorers, and the runners.

A suite is a folder with ``queries.jsonl`` (questions, their verbatim golden passages
and key facts, some marked unanswerable), a corpus (``corpus/`` or the folder
``suite.json`` names) and optionally ``thresholds.json`` (the release gates); see
``eval_suites/README.md``. :mod:`varagity.eval.scoring` matches passages by content, so
any chunking strategy can be scored against the same suite;
:mod:`varagity.eval.answer_scoring` judges generated answers, which
:mod:`varagity.eval.answers` produces through the chat turn runner.

A graph suite (:mod:`varagity.eval.graph_suite`) asks about one person's chats instead:
questions with a gold answer, a type (single, multi, null) and the sessions that
answer them, over LiHua-World-style session files that :mod:`varagity.eval.lihua`
writes into the Messages archive the message graph is built from.
"""
