"""The embedded search index (``index.EmbeddedSearchIndex``): SQLite (FTS5 for BM25) + one
in-memory float32 matrix per context.

Why this shape: the single-machine mode needs BM25 and vector legs with the same semantics as
the OpenSearch projection (ranked and fused by ``agent_memory.ranking``), persistent across
restarts, without a server. SQLite holds the truth
(``units`` rows, an external-content FTS5 table kept in sync by triggers, and ``vectors``
blobs); searches run against a per-context in-memory view that is loaded lazily on the first
search of a context (from its persisted snapshot when it has one, ``view_snapshots``,
else rebuilt from the rows) and kept in sync by every upsert/delete:

- one ``(rows, dimension)`` float32 matrix, so the vector leg is one matrix-vector product;
- per-row code arrays (kind, partition, role, session, thread), validity bounds as epoch
  floats, and small-integer "signatures" for scopes / reader lists / labels, so every filter
  is a vectorised boolean mask computed *before* any top-k cut. Visibility of a signature
  (a distinct DNF, reader list or label set) is evaluated once per query per distinct value,
  not once per row.

The BM25 leg asks FTS5 (``bm25()`` ranking, porter/unicode61 tokens, the query turned into
an OR of quoted words so no user text is parsed as FTS syntax) for results in rank order and
applies the same mask to each candidate; when a page of candidates does not yield enough
visible rows it scores every match, so a query whose best matches are all invisible still
returns ``k`` visible hits. Each row also carries a per-context token column (weight 0 in the
ranking) that the query ANDs in, so FTS5 only scores rows of the caller's context. Because
``bm25()`` costs about a microsecond per matching row, very common query words are held out
of the ranked query past a budget (``BM25_MATCH_BUDGET``) and only used to fill the tail.

Thread safety: one connection (WAL) and one re-entrant lock around every read and write of
SQLite and of the in-memory views; embedding calls run outside the lock.

One module per concern: ``index`` (the ``SearchIndex``: writes, reads, the views' lifecycle),
``sql`` (schema, upsert, stored row forms), ``fts`` (query words and MATCH expressions),
``view`` (the per-context numpy view and its masks), ``bm25`` and ``vectors`` (the two legs),
``term_index`` (in-memory postings of a small context), ``ann`` (the HNSW graph of a large
one) and ``view_snapshots`` (views persisted as built). Nothing is imported here, so naming
the package costs no numpy.
"""
