"""The extraction prompt: instructions a real model can follow, plus a structured data block.

``build_extraction_prompt`` returns ``(system, user)``. The system message carries the
rules (speaker mapping, reuse of known entity names, key vocabulary and cardinality,
negation, categories, verbatim time phrases). The user message ends with the turn-data
block (``rules/turn_data.py``), the only place the turn text appears, so the turn is data,
never instructions; the offline provider reads that block back.
"""

from __future__ import annotations

from datetime import datetime

from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import ENTITY_TYPES
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.self_entity import SELF_NAME
from agent_memory.rules.turn_data import TurnInput, turn_data_block


def _keys(cardinality: str) -> str:
    return ", ".join(k for k, spec in vocab.KEYS.items() if spec.cardinality == cardinality)


def _labels(cardinality: str) -> str:
    return ", ".join(k for k, c in vocab.LABELS.items() if c == cardinality)


def system_prompt() -> str:
    return f"""You extract long-term memory from ONE conversation turn that a user wrote to an AI assistant.
Answer with JSON matching the schema. State only what the turn says; never guess or add world knowledge.

Speaker
- "I", "me", "my" are the user. Name the user entity exactly "{SELF_NAME}" (type person), even when you
  know their name. A statement about the user's own name in the third person is about "{SELF_NAME}" too.

Entities
- When the turn refers to a known entity (listed in the data block), use its name EXACTLY as listed.
- Otherwise use the name as written. type is one of: {", ".join(ENTITY_TYPES)}.
- List every entity you use in attributes, relations or actions under "entities".

Attributes (entity, key, value)
- key: lower snake_case. Prefer these keys.
  Single-valued (a new value replaces the old): {_keys("single")}.
  Multi-valued (values accumulate): {_keys("multi")}.
  For a new key, set cardinality to "single" or "multi"; otherwise you may leave it null.
- value: the bare value ("Berlin", not "lives in Berlin"; "sushi", not "likes sushi"). One value per
  attribute: "I like sushi and ramen" is two attributes.
- Negation: when the turn says something is no longer true ("I no longer work at Acme",
  "I don't like sushi anymore"), emit the attribute with the value that stopped being true and
  negated=true. "I don't like X" (without "anymore") is dislikes=X.
- confidence: 0.9 for plain statements, about 0.4 for hedged ones ("I think", "maybe").

Relations (subject, label, object)
- label: the role the object plays for the subject, a singular snake_case noun:
  single-valued: {_labels("single")}; multi-valued: {_labels("multi")}.
  "My sister Emma lives in Oslo" -> relation {SELF_NAME} -sister-> Emma, plus attribute Emma location Oslo.
  "I work with Carol" -> {SELF_NAME} -colleague-> Carol. Use negated=true when a relation ended.

Actions
- Things someone did at a point in time ("I ran a marathon yesterday"): actor, verb as written ("ran"),
  object without article ("marathon"), summary: one short third-person sentence.

Time
- Copy the time phrase EXACTLY as written into valid_from (attributes, relations) or occurred_at (actions):
  "last month", "in 2023", "yesterday", "3 weeks ago". Never compute dates. Leave null when none is given.

Categories
- identity: who someone is (names, age, job, employer, location, contact details, family).
- knowledge: preferences, skills, languages, hobbies, things they have or know.
- context: transient situation (mood, current task, plans). Leave null when unsure.

Instructions
- Standing requests about the assistant's behaviour ("Always answer in German", "Never mention my salary",
  "From now on call me Al"): label = short snake_case topic (language, form_of_address, ...),
  description = the instruction in full. "From now on call me Al" is also attribute nickname = Al.

Uncertainties
- Only when the turn makes an important point ambiguous: about (what), reason (why). Usually none.

Questions and requests for information state no facts: return empty lists."""


def build_extraction_prompt(
    text: str,
    *,
    speaker_name: str | None,
    known_entities: list[str],
    observed_at: datetime | str | None,
) -> tuple[str, str]:
    """``(system, user)`` messages for one extraction call."""
    observed = timeutil.iso(observed_at) if isinstance(observed_at, datetime) else observed_at
    turn = TurnInput(text=text, speaker_name=speaker_name, known_entities=list(known_entities),
                     observed_at=observed)
    user = (
        "Extract memory from the user's turn in the data block below. "
        f"The user entity is \"{SELF_NAME}\""
        + (f" (their name is {speaker_name})" if speaker_name else " (their name is not known yet)")
        + ". Reuse known entity names exactly.\n\n"
        + turn_data_block(turn)
    )
    return system_prompt(), user


WINDOW_RULES = """

Document passages
- This call covers several consecutive passages of one document, listed in order under "passages"
  in the data block ("turn" is empty). Extract each passage as if it were its own turn.
- Set "passage" on every entity, attribute, relation, action, instruction and uncertainty to the
  index (0-based) of the passage that states it. An entity used in several passages is listed once
  per passage, with that passage's index."""


def build_window_prompt(
    passages: list[str],
    *,
    speaker_name: str | None,
    known_entities: list[str],
    observed_at: datetime | str | None,
) -> tuple[str, str]:
    """``(system, user)`` for one extraction call over consecutive document chunks (a window):
    the same rules as a turn's, plus the passage attribution each item must carry."""
    observed = timeutil.iso(observed_at) if isinstance(observed_at, datetime) else observed_at
    turn = TurnInput(text="", speaker_name=speaker_name, known_entities=list(known_entities),
                     observed_at=observed, passages=list(passages))
    user = (
        f"Extract memory from each of the {len(passages)} document passages in the data block below. "
        f"The user entity is \"{SELF_NAME}\""
        + (f" (their name is {speaker_name})" if speaker_name else " (their name is not known yet)")
        + ". Reuse known entity names exactly.\n\n"
        + turn_data_block(turn)
    )
    return system_prompt() + WINDOW_RULES, user
