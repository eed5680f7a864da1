"""Retrieval evaluation in Dagster: the golden suite scored on the live index, gated."""
