"""The profile view (``GET /profile``): current facts sorted for a prompt or a
"what does the AI know about me?" page.

Shape: ``{selfFacts, static, dynamic, preferences, instructions}``. Every entry of the first
four is ``{entity, entityType, key, value}``: the entity the fact is *about* travels with
it, so a fact about someone the user mentioned is never read as a fact about the user.
``instructions`` are the active standing instructions, ``{id, label, description}``.

Rules (decided here, tested in tests/unit/test_profile_rules.py):

1. Only current facts are listed (not superseded, closed, deleted or forgotten; the same
   rows as ``/state``). Attributes give ``key`` = attribute key and ``value`` = its value;
   relations give ``key`` = the relation label and ``value`` = the *display name* of the
   object entity (``user -sister-> emma`` is ``{key: sister, value: Emma}``). Actions and
   uncertainties are not part of the profile.
2. ``selfFacts``: every current fact whose subject is the self entity
   ``entity:person/user`` (``rules/self_entity.py``), whatever its key. Nothing
   about another entity is ever listed there, even a fact stated by the user ("My sister
   Emma lives in Oslo" puts ``sister: Emma`` in selfFacts and ``location: Oslo`` only
   under Emma). Relations *to* the user from another entity are about that entity.
3. Every current fact (the user's and other entities') is also sorted into exactly one of
   ``static``, ``dynamic`` or ``preferences`` by its key (after synonym normalisation,
   ``cardinality.normalise_key``):

   - ``preferences``: tastes and choices: ``likes``, ``dislikes``, ``preferences``,
     ``interests``, ``hobbies``, ``diet``, any ``favourite_*`` key, and keys starting
     ``prefers_`` or ending ``_preference``.
   - ``static``: identity-ish, rarely changing: ``name``, ``nickname``, ``birthday``,
     ``age``, ``gender``, ``pronouns``, ``nationality``, ``hometown``,
     ``native_language``, ``languages``, ``education``, ``allergies``, ``email``,
     ``phone``; and family relations (``mother``, ``father``, ``spouse``, ``sister``,
     ``brother``, ``sibling``, ``child``, ``son``, ``daughter``, ``parent``, ``cousin``,
     ``aunt``, ``uncle``, ``grand*``).
   - ``dynamic``: things that change: ``location``, ``address``, ``employer``,
     ``job_title``, ``relationship_status``, ``timezone``, ``mood``, ``current_task``,
     ``current_project``, ``availability``, ``plans``, ``goals``, ``skills``, ``pets``,
     ``tools``, ``certifications``; and every other relation (manager, colleague,
     friend, partner, ...).
   - Any other key falls back on its memory category: ``identity`` -> static,
     ``knowledge`` and ``context`` -> dynamic (a fact we cannot place is assumed to be
     one that may change, so a UI never shows it as permanent).
4. Order: the self entity's facts first, then other entities by id; within an entity by
   key, then value. Each list holds at most ``limit`` entries (default 100, cap 500).
"""

from __future__ import annotations

from typing import Literal

from agent_memory.rules import vocabulary as vocab

Section = Literal["static", "dynamic", "preferences"]

PREFERENCE_KEYS = frozenset({"likes", "dislikes", "preferences", "interests", "hobbies", "diet"})
STATIC_KEYS = frozenset({"name", "nickname", "birthday", "age", "gender", "pronouns", "nationality", "hometown",
                         "native_language", "languages", "education", "allergies", "email", "phone"})
DYNAMIC_KEYS = frozenset({"location", "address", "employer", "job_title", "relationship_status", "timezone",
                          "mood", "current_task", "current_project", "availability", "plans", "goals", "skills",
                          "pets", "tools", "certifications"})
FAMILY_LABELS = frozenset({"mother", "father", "spouse", "sister", "brother", "sibling", "child", "son",
                           "daughter", "parent", "cousin", "aunt", "uncle", "grandmother", "grandfather",
                           "grandchild"})


def attribute_section(key: str, category: str | None = None) -> Section:
    """Where an attribute of ``key`` (memory category ``category``) is listed (rule 3)."""
    k = vocab.normalise_key(key)
    if k in PREFERENCE_KEYS or k.startswith(("favourite_", "prefers_")) or k.endswith("_preference"):
        return "preferences"
    if k in STATIC_KEYS:
        return "static"
    if k in DYNAMIC_KEYS:
        return "dynamic"
    return "static" if (category or vocab.category(k)) == "identity" else "dynamic"


def relation_section(label: str) -> Section:
    """Family relations are static; every other relation may change (rule 3)."""
    lab = vocab.normalise_label(label)
    return "static" if lab in FAMILY_LABELS or lab.startswith("grand") else "dynamic"
