"""Turning one conversation turn into an ``ExtractionOutput``.

- ``prompt``: the prompt a real model gets (and the data block the offline model reads back).
- ``offline``: the deterministic pattern extractor used without a model key.
- ``speaker``: who "I" is (the self entity ``entity:person/user``).
"""

from agent_memory.services.extraction.offline import (
    extraction_handler,
    offline_extract,
    register_offline_extractor,
)
from agent_memory.services.extraction.prompt import (
    PromptData,
    build_extraction_prompt,
    parse_extraction_prompt,
)
from agent_memory.services.extraction.speaker import SELF_ENTITY_ID, SELF_NAME, is_self, resolve_self

__all__ = [
    "SELF_ENTITY_ID", "SELF_NAME", "PromptData", "build_extraction_prompt", "extraction_handler", "is_self",
    "offline_extract", "parse_extraction_prompt", "register_offline_extractor", "resolve_self",
]
