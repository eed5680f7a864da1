"""Chat engines: what the retriever searches for, given a turn and its conversation."""
