"""OpenAI-compatible model clients and the packaged local model servers."""
