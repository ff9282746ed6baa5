"""Ranking: how the candidates of the search legs become one ordered list.

- ``recipes``: ``SearchRecipe`` and ``RECIPES``, each caller's legs, depths and weights as data.
- ``fusion``: weighted reciprocal-rank fusion with leg scores (``fuse``, ``best_k``, ``Leg``,
  ``candidate_depth``, ``RRF_K``).
- ``rules``: the ranking rules as pure functions over candidate columns (``share_of_best``,
  ``share_with_neighbours``, ``session_prior``, ``share_with_replies``, ``kind_factor``,
  ``key_hint_factor``, ``said_factor`` for superseded and supporting turns, ``time_factor``, and
  ``evidence_factor`` for decoded hits: questions, echoes, superseded turns; and
  ``session_codes``, the integer groups the session rules share).
- ``rank``: a recipe applied to a ranking's legs: fusion, the rules in order, the cut
  (``rank``, ``QueryFacts``).
- ``rerank``: the best fused candidates blended with a ``ports.Reranker``'s scores, a tier-1
  answer pinned first (``rerank``).
- ``search``: a recipe's BM25 and vector legs from a ``SearchIndex`` (which answers single
  legs), fused and ranked (``search``): what callers without tier-1 reads rank by (threads).
- ``rows``: ``RowRanking`` columns built from decoded units (``ranking_from_units``,
  ``ranking_with_units``).
- ``visibility``: ``SearchFilter`` rules for units held in memory (``unit_visible``) and the
  nearest of them by vector (``nearest_visible``): tier-1 reads, units not yet searchable.
- ``encoding``: the values a unit contributes to ranking columns (``unit_features``,
  ``saturate`` for BM25 scores, ``instant`` for timestamps).

Nothing here imports an adapter or a service (``.importlinter``): callers pass what they know
of the query as plain values. The package root imports nothing, so importing ``recipes`` loads
no numpy.
"""
