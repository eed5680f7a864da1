"""Varagity: the domain library (no Dagster, no FastAPI imports)."""
