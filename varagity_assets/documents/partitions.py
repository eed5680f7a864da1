"""One dynamic partition per corpus file, keyed by its path relative to ``DOCS_PATH``."""

import dagster as dg

# Never rename: the partition set lives in the instance under this name.
DOCUMENTS = "documents"
documents_partitions = dg.DynamicPartitionsDefinition(name=DOCUMENTS)
