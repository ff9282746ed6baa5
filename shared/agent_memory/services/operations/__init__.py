"""Operations: search projection, redrive, reindex, the catalogue and traces."""
