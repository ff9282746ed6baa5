"""The extraction prompt's data block: the one place a turn's text travels to a model.

The prompt's user message (``services/prompts/extraction.py``) ends with one fenced
block

    ```json turn-data
    {"observedAt": ..., "speakerName": ..., "knownEntities": [...], "turn": ...}
    ```

so the turn is data, never instructions. Backticks inside the JSON are written as
``\\u0060``, so the turn text can never close the fence early. The offline provider reads
this payload back (``read_turn``), the same input a real model is given; nothing travels
beside the prompt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

FENCE_INFO = "json turn-data"

_BLOCK = re.compile(r"```" + re.escape(FENCE_INFO) + r"\n(?P<body>[^`]*)\n```", re.DOTALL)


@dataclass
class TurnInput:
    text: str
    speaker_name: str | None = None
    known_entities: list[str] = field(default_factory=list)
    observed_at: str | None = None
    # A document window: consecutive chunks extracted in one call, each item naming its
    # passage (``passage`` on each extracted item); ``text`` is then empty.
    passages: list[str] | None = None


def turn_data_block(turn: TurnInput) -> str:
    """The fenced block carrying ``turn``."""
    payload = {
        "observedAt": turn.observed_at,
        "speakerName": turn.speaker_name,
        "knownEntities": list(turn.known_entities),
        "turn": turn.text,
    }
    if turn.passages is not None:
        payload["passages"] = list(turn.passages)
    body = json.dumps(payload, ensure_ascii=False, indent=1).replace("`", "\\u0060")
    return f"```{FENCE_INFO}\n{body}\n```"


def read_turn(user: str) -> TurnInput:
    """The turn-data payload of ``user``. Raises ``ValueError`` when it carries none (or an
    invalid one). Backticks inside the JSON are escaped by the writer, so the block's end is
    its closing fence."""
    matches = list(_BLOCK.finditer(user or ""))
    if not matches:
        raise ValueError("extraction prompt has no turn-data block")
    data = json.loads(matches[-1].group("body"))
    if not isinstance(data, dict) or not isinstance(data.get("turn"), str):
        raise ValueError("turn-data block has no turn text")
    known = data.get("knownEntities") or []
    passages = data.get("passages")
    if passages is not None and not (isinstance(passages, list) and all(isinstance(p, str) for p in passages)):
        raise ValueError("turn-data passages must be a list of strings")
    return TurnInput(
        text=data["turn"],
        speaker_name=data.get("speakerName") or None,
        known_entities=[str(k) for k in known if isinstance(k, str)],
        observed_at=data.get("observedAt"),
        passages=passages,
    )
