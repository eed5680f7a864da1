"""The per-file ingest domain: partitions, assets, sensors, resources."""
