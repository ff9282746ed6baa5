"""The OpenSearch search index (``index.OpenSearchIndex``): one k-NN index per tenant stack,
BM25 and vector legs.

Why this shape:

- Every filter runs *inside* the search. The vector leg uses the k-NN plugin's efficient
  filtering (``"knn": {"embedding": {"vector", "k", "filter"}}``): the engine restricts the
  graph search to documents matching the filter, so ``k`` visible hits come back whenever
  ``k`` exist, unlike a post-filter that cuts after top-k. The BM25 leg carries the same
  bool filter. The index answers ranked legs; fusing them is ``agent_memory.ranking``'s, the
  same for both backends, so they rank alike. The legs of one ``rank_rows`` call go in one
  round trip (``_msearch`` on a domain, concurrent ``_search`` requests on Serverless).
- Projections are idempotent and order-tolerant. On a managed domain (``service="es"``) or a
  self-managed cluster, bulk writes use ``_id`` = (context, unit) and ``version_type:
  external_gte`` with the unit's ``revision`` as the version, so a stale stream record is
  rejected by OpenSearch (HTTP 409, treated as success) and an equal revision overwrites.
  Serverless vector collections (``service="aoss"``) refuse client-chosen ``_id``s (and so
  external versions), have no refresh API and may lack ``_delete_by_query``; there the
  adapter compares revisions itself (one search for the units' visible copies, then one bulk
  that indexes new copies and deletes replaced ones), ``get`` is a query, and
  ``delete_context`` pages through the context and bulk-deletes.
- Writes become searchable only at the next refresh (about a second on a domain, longer on
  Serverless), so the index can still show a superseded, deleted or reader-narrowed copy,
  or (Serverless) a copy its writer could not see to delete. Every hit therefore carries its
  revision and record key, and before ranking the reader drops hits that are not the current
  revision of a live record (``LiveRevisions``: one consistent batched read of the store).
- Every request names the index in its path (``POST /<index>/_bulk``, never ``/_bulk`` or
  ``GET /``), so IAM or a Serverless data access policy confines a tenant to its own index.
- The index records the embedder in the mapping's ``_meta``; a different embedder name or
  dimension raises ``EmbedderMismatch`` instead of mixing incomparable vectors.
- ``opensearchpy`` and ``boto3`` are imported lazily so the domain package (and the
  embedded mode) never pays for them.

Scope visibility as an index filter (DNF; see ``agent_memory.access.scopes``). A unit is visible
to a region when it is unscoped or some clause has *every* path covered, where a region path
covers itself and its descendants. Each document stores:

- ``scope_unscoped``: ``true`` when the DNF is empty.
- ``scope_single_anc``: for every *single-path* clause ``[p]``, all of ``ancestors(p)``
  (``org/acme/user/alice`` -> ``org``, ``org/acme``, ``org/acme/user``, ``org/acme/user/alice``).
  Region path ``r`` covers ``p`` exactly when ``r`` is one of ``p``'s ancestors, and OR over
  clauses distributes over the union, so "some single-path clause is covered" is one plain
  ``terms`` query of the region paths against this field. This is the common case and needs
  no script.
- ``scope_clauses``: for every clause with two or more paths (up to ``MAX_CLAUSE_PATHS``), a
  nested object whose ``p<i>`` holds the ancestors of the clause's i-th path. "Every path of
  the clause covered" is then a nested query: some clause object where each ``p<i>`` meets the
  region (``terms``) or is absent. Plain terms and bools: no script, on either engine.

The scope filter is ``should: [unscoped, terms(single_anc, region), nested(every p<i> in
region or absent)]`` with ``minimum_should_match: 1``. A region path with ``*`` segments
(``users/*/private``) cannot be a ``terms`` value: it becomes an anchored ``regexp`` query on
the same ancestor fields (``users/[^/]+/private``), one per such path (``region_match``).

One module per concern: ``mapping`` (the index's settings and mapping, and the document a unit
becomes), ``queries`` (the filter and the two legs' request bodies), ``client`` (the signed
client and what a transport failure means), ``index`` (the ``SearchIndex``) and ``admin``
(versioned indexes behind an alias, made by the stack's deploy step). Nothing is imported
here, and ``opensearchpy`` and ``boto3`` only when a client is made or a failure classified.
"""
