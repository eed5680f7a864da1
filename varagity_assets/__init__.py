"""Varagity's Dagster code location (load ``varagity_assets.definitions``)."""
