"""Ranking: how candidates from the search legs become an ordered list.

- ``encoding``: the values a unit contributes to ranking columns (``unit_features``,
  ``saturate`` for BM25 scores, ``instant`` for timestamps).
- ``rows``: ``RowRanking`` columns built from decoded units (``ranking_from_units``,
  ``ranking_with_units``).
"""
