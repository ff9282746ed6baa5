"""Turning one conversation turn into an ``ExtractionOutput``.

- ``windows``: one extraction call over a window of document chunks, split back per chunk.
- ``triples``: caller-supplied facts (``infer: triples``) read as an extraction, no model call.
- ``halving``: an extraction too large for one write's transaction, cut down to what it holds.

The prompt a real model gets is ``services/prompts/extraction.py`` (its user message ends with
the turn-data block, ``agent_memory.rules.turn_data``).

Who "I" is (the self entity ``entity:person/user``) is a rule: ``agent_memory.rules.self_entity``.
The deterministic offline provider used without a model key is an adapter:
``agent_memory.adapters.offline``.
"""
