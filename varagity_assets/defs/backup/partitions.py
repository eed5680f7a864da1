"""``backup_bundle`` is partitioned by corpus: ``rag`` (the documents) and ``graph`` (the
message graph), each backed up into its own folder's ``varagity-exports/``."""

import dagster as dg

from varagity.pipeline import BACKUP_CORPORA

corpus_partitions = dg.StaticPartitionsDefinition(list(BACKUP_CORPORA))
