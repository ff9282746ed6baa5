"""What the offline extractor reads from an extraction call: the structured payload of the
user message (``services/facts/extraction/prompt.py`` ends it with one fenced JSON block,
```` ```json turn-data ````, holding ``turn``, ``speakerName``, ``knownEntities`` and
``observedAt``). The fake reads that payload, the same input a real model is given; nothing
travels beside the prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from agent_memory.services.facts.extraction.prompt import FENCE_INFO

_BLOCK = re.compile(r"```" + re.escape(FENCE_INFO) + r"\n(?P<body>[^`]*)\n```", re.DOTALL)


@dataclass
class TurnInput:
    text: str
    speaker_name: str | None = None
    known_entities: list[str] = field(default_factory=list)
    observed_at: str | None = None


def read_turn(user: str) -> TurnInput:
    """The turn-data payload of ``user``. Raises ``ValueError`` when it carries none (or an
    invalid one). Backticks inside the JSON are escaped by the prompt, so the block's end is
    its closing fence."""
    matches = list(_BLOCK.finditer(user or ""))
    if not matches:
        raise ValueError("extraction prompt has no turn-data block")
    data = json.loads(matches[-1].group("body"))
    if not isinstance(data, dict) or not isinstance(data.get("turn"), str):
        raise ValueError("turn-data block has no turn text")
    known = data.get("knownEntities") or []
    return TurnInput(
        text=data["turn"],
        speaker_name=data.get("speakerName") or None,
        known_entities=[str(k) for k in known if isinstance(k, str)],
        observed_at=data.get("observedAt"),
    )
