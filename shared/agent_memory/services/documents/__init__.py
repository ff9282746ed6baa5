"""Documents and ingestion: upload, chunking, the ingestion worker and chunk search units."""
