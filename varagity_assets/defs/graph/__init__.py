"""Message archives into the message graph: partitions, assets, checks, job, sensor."""
