"""Turning one conversation turn into an ``ExtractionOutput``.

- ``windows``: one extraction call over a window of document chunks, split back per chunk.

The prompt a real model gets is ``services/prompts/extraction.py`` (its user message ends with
the turn-data block, ``agent_memory.rules.turn_data``).

Who "I" is (the self entity ``entity:person/user``) is a rule: ``agent_memory.rules.speaker``.
The deterministic offline provider used without a model key is an adapter:
``agent_memory.adapters.offline``.
"""
