"""Turning one conversation turn into an ``ExtractionOutput``.

- ``prompt``: the prompt a real model gets (its user message ends with the turn-data block,
  ``agent_memory.rules.turn_data``).
- ``windows``: one call over consecutive document chunks, split back per chunk.
- ``triples``: caller-supplied facts (``infer: triples``) read as an extraction, no model call.
- ``halving``: an extraction too large for one write's transaction, cut down to what it holds.

Who "I" is (the self entity ``entity:person/user``) is a rule: ``agent_memory.rules.speaker``.
The deterministic offline provider used without a model key is an adapter:
``agent_memory.adapters.offline``.
"""

from agent_memory.services.facts.extraction.prompt import build_extraction_prompt

__all__ = ["build_extraction_prompt"]
