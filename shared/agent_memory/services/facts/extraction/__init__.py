"""Turning one conversation turn into an ``ExtractionOutput``.

- ``prompt``: the prompt a real model gets (its user message ends with a JSON data block).
- ``speaker``: who "I" is (the self entity ``entity:person/user``).

The deterministic offline provider used without a model key is an adapter:
``agent_memory.adapters.offline``.
"""

from agent_memory.services.facts.extraction.prompt import build_extraction_prompt
from agent_memory.services.facts.extraction.speaker import SELF_ENTITY_ID, SELF_NAME, is_self, resolve_self

__all__ = ["SELF_ENTITY_ID", "SELF_NAME", "build_extraction_prompt", "is_self", "resolve_self"]
