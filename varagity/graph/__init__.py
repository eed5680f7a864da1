"""The message graph: a peer corpus over message archives (iMessage ``chat.db``).

Chunk RAG answers "what do my documents say"; the graph answers "who, with whom, and
when". Its unit is a conversation-day: a message source (:mod:`varagity.graph.sources`)
reads an archive into thread-day transcripts (:class:`~varagity.graph.types.ThreadDay`),
the manifest sidecar (:mod:`varagity.graph.manifest`) diffs them against what the
engine holds, and a graph engine (:mod:`varagity.graph.base`, ``GRAPH_ENGINE``) applies
the diff and answers retrieval. The two corpora share transport, evidence contract and
answer prompt, and no storage.
"""
