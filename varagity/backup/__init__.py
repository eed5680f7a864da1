"""Backups of each corpus: bundles beside the sources, restored without a model call."""
