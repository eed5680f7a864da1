"""Corpus files into the stores: partitions, per-file assets, purges, staleness, sensors."""
