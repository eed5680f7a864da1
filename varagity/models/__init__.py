"""OpenAI-compatible model clients: chat, embeddings and the reranker."""
