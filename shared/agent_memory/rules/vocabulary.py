"""The one registry of known attribute keys and relation labels.

Reconciliation needs two facts about every key before it can store a value: is the key
single-valued (a new value *supersedes* the current one) or multi-valued (values
*accumulate*; a negation closes only its own value), and which memory category a value
of that key belongs to when the model did not say.

Categories (our decision, applied as defaults only; a model's stated category wins):

- ``identity``: who an entity *is*: names, age, birthday, nationality, where they live,
  who employs them and as what, contact details. Stable, high-importance facts.
- ``knowledge``: what an entity likes, knows, has or does habitually: preferences,
  skills, languages, hobbies, pets, allergies, favourites. Also the default for keys the
  registry does not know.
- ``context``: situational state that goes stale quickly: mood, current task, plans,
  availability, current project.

Cardinality precedence: the registry, else the cardinality the model stated for a new
key, else single (docs/decisions.md, "Cardinality"). Relation labels use the same mechanism with a
different fallback: an unknown label is multi-valued, because wrongly accumulating two
relations loses nothing while wrongly superseding one silently drops a true fact.

Keys are lower snake_case; synonyms collapse onto one canonical key (``city``,
``lives_in`` -> ``location``) so that "I live in London" and a model's ``city: London``
compete for the same slot. Relation labels are role nouns naming what the *object* is to
the *subject* (``user -sister-> emma``: Emma is the user's sister), singular, snake_case.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

Cardinality = Literal["single", "multi"]
Category = Literal["identity", "knowledge", "context"]

INITIAL_IMPORTANCE: dict[str, float] = {"identity": 1.0, "knowledge": 0.8, "context": 0.5}
DEFAULT_CATEGORY: Category = "knowledge"

# The categories other memory systems name (agent frameworks send them as a write's
# ``memory_category``), each mapped to the nearest of ours by the definitions above:
# who someone is -> identity; lasting knowledge, preferences and how-to -> knowledge;
# events, episodes and what is going on now -> context. docs/http-api.md lists this table.
CATEGORY_SYNONYMS: dict[str, Category] = {
    **{w: "identity" for w in ("identity", "profile", "personal", "persona", "biographical", "user")},
    **{w: "knowledge" for w in ("knowledge", "semantic", "fact", "facts", "preference", "preferences",
                                "procedural", "skill", "skills", "long_term", "longterm", "general")},
    **{w: "context" for w in ("context", "episodic", "episode", "event", "events", "working", "short_term",
                              "shortterm", "session", "situational", "task", "conversation")},
}


def category_of(value: str) -> Category | None:
    """The category a write's ``memory_category`` names (ours, or a synonym from
    ``CATEGORY_SYNONYMS``, case and ``-``/space insensitive); ``None`` if it names none."""
    return CATEGORY_SYNONYMS.get(re.sub(r"[\s-]+", "_", value.strip().lower()))


@dataclass(frozen=True)
class KeySpec:
    cardinality: Cardinality
    category: Category


def _specs(cardinality: Cardinality, category: Category, *keys: str) -> dict[str, KeySpec]:
    return {k: KeySpec(cardinality, category) for k in keys}


KEYS: dict[str, KeySpec] = {
    **_specs("single", "identity",
             "name", "nickname", "age", "birthday", "gender", "pronouns", "nationality",
             "hometown", "location", "employer", "job_title", "email", "phone", "timezone",
             "relationship_status", "native_language", "education", "address"),
    **_specs("multi", "knowledge",
             "likes", "dislikes", "preferences", "skills", "languages", "pets", "hobbies",
             "allergies", "interests", "goals", "diet", "certifications", "tools",
             "memory"),  # a memory imported from Mem0 (compat/mem0.py): many per user
    **_specs("single", "context", "mood", "current_task", "current_project", "availability"),
    **_specs("multi", "context", "plans"),
}

KEY_SYNONYMS: dict[str, str] = {
    # location
    "city": "location", "lives_in": "location", "living_in": "location", "based_in": "location",
    "home": "location", "residence": "location", "home_city": "location", "current_city": "location",
    "current_location": "location", "place_of_residence": "location",
    # employer
    "works_at": "employer", "works_for": "employer", "company": "employer", "workplace": "employer",
    "organisation": "employer", "organization": "employer", "employed_by": "employer",
    "current_employer": "employer",
    # job title
    "title": "job_title", "role": "job_title", "job": "job_title", "position": "job_title",
    "occupation": "job_title", "profession": "job_title", "jobtitle": "job_title",
    # names
    "full_name": "name", "first_name": "name", "given_name": "name",
    "nick": "nickname", "preferred_name": "nickname", "alias": "nickname",
    # preferences
    "like": "likes", "love": "likes", "loves": "likes", "enjoys": "likes", "enjoy": "likes",
    "dislike": "dislikes", "hates": "dislikes", "hate": "dislikes",
    "preference": "preferences", "prefers": "preferences", "prefer": "preferences",
    "skill": "skills", "language": "languages", "speaks": "languages", "spoken_languages": "languages",
    "pet": "pets", "hobby": "hobbies", "interest": "interests", "goal": "goals",
    "allergy": "allergies", "allergic_to": "allergies",
    # contact, misc identity
    "email_address": "email", "e_mail": "email", "phone_number": "phone", "mobile": "phone",
    "time_zone": "timezone", "tz": "timezone", "dob": "birthday", "date_of_birth": "birthday",
    "birth_date": "birthday", "birthdate": "birthday", "marital_status": "relationship_status",
    "citizenship": "nationality", "from": "hometown", "origin": "hometown", "born_in": "hometown",
    "mother_tongue": "native_language", "first_language": "native_language",
    "plan": "plans",
}

LABELS: dict[str, Cardinality] = {
    **dict.fromkeys(("mother", "father", "spouse", "partner", "manager", "fiance"), "single"),
    **dict.fromkeys(("sister", "brother", "sibling", "child", "son", "daughter", "friend", "colleague",
                     "cousin", "aunt", "uncle", "grandmother", "grandfather", "grandchild", "parent",
                     "report", "mentor", "roommate", "neighbour", "acquaintance", "client"), "multi"),
}

LABEL_SYNONYMS: dict[str, str] = {
    "mom": "mother", "mum": "mother", "mommy": "mother", "mummy": "mother",
    "dad": "father", "daddy": "father",
    "husband": "spouse", "wife": "spouse", "married_to": "spouse",
    "boyfriend": "partner", "girlfriend": "partner", "fiancee": "fiance",
    "boss": "manager", "supervisor": "manager", "reports_to": "manager", "line_manager": "manager",
    "coworker": "colleague", "co_worker": "colleague", "workmate": "colleague", "teammate": "colleague",
    "works_with": "colleague", "colleagues": "colleague",
    "kid": "child", "children": "child", "kids": "child", "sons": "son", "daughters": "daughter",
    "best_friend": "friend", "friends": "friend", "friends_with": "friend", "pal": "friend", "buddy": "friend",
    "sisters": "sister", "brothers": "brother", "siblings": "sibling",
    "grandma": "grandmother", "granny": "grandmother", "grandpa": "grandfather",
    "neighbor": "neighbour", "flatmate": "roommate", "housemate": "roommate",
    "direct_report": "report", "sister_of": "sister", "brother_of": "brother",
}

_NON_WORD = re.compile(r"[^0-9a-z]+")


def snake_case(value: str) -> str:
    """``"Job Title"`` / ``jobTitle`` / ``job-title`` -> ``job_title`` (accents folded)."""
    text = unicodedata.normalize("NFKD", (value or "").strip())
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = text.lower().replace("'s ", " ")
    return _NON_WORD.sub("_", text).strip("_")


# Word spellings folded inside a key, so both spellings name one slot: ``favorite_color``
# and ``favourite_colour`` are the same key (a value under one supersedes the other).
KEY_SPELLINGS: dict[str, str] = {
    "favorite": "favourite", "favorites": "favourites", "color": "colour", "colors": "colours",
    "flavor": "flavour", "flavors": "flavours",
}


def normalise_key(key: str) -> str:
    """The one place attribute keys are normalised: lower snake_case, each word's spelling
    (``KEY_SPELLINGS``), then synonyms (``"Lives in"`` -> ``location``)."""
    k = "_".join(KEY_SPELLINGS.get(part, part) for part in snake_case(key).split("_"))
    return KEY_SYNONYMS.get(k, k)


def normalise_label(label: str) -> str:
    """Lower snake_case role noun (``"Boss"`` -> ``manager``, ``"works with"`` -> ``colleague``)."""
    k = snake_case(label).removeprefix("is_").removesuffix("_of")
    k = LABEL_SYNONYMS.get(k, k)
    return k


def _hint(model_hint: str | None) -> Cardinality | None:
    h = (model_hint or "").strip().lower()
    return h if h in ("single", "multi") else None  # type: ignore[return-value]


def cardinality(key: str, model_hint: str | None = None) -> Cardinality:
    """Registry, else the model's stated cardinality, else single."""
    spec = KEYS.get(normalise_key(key))
    if spec is not None:
        return spec.cardinality
    return _hint(model_hint) or "single"


def label_cardinality(label: str, model_hint: str | None = None) -> Cardinality:
    """Registry, else the model's hint, else multi (see module docstring)."""
    known = LABELS.get(normalise_label(label))
    return known or _hint(model_hint) or "multi"


def category(key: str, model_hint: str | None = None) -> Category:
    """The model's stated category, else the key's registered default, else knowledge."""
    h = (model_hint or "").strip().lower()
    if h in INITIAL_IMPORTANCE:
        return h  # type: ignore[return-value]
    spec = KEYS.get(normalise_key(key))
    return spec.category if spec is not None else DEFAULT_CATEGORY


def label_category(label: str, model_hint: str | None = None) -> Category:
    """Relations between people (family, work) describe who someone is: identity by default."""
    h = (model_hint or "").strip().lower()
    if h in INITIAL_IMPORTANCE:
        return h  # type: ignore[return-value]
    return "identity" if normalise_label(label) in LABELS else DEFAULT_CATEGORY


def initial_importance(cat: str) -> float:
    return INITIAL_IMPORTANCE.get(cat, INITIAL_IMPORTANCE[DEFAULT_CATEGORY])


def known_category(value: str) -> Category:
    """``value`` if it is a memory category, else the default one."""
    return value if value in INITIAL_IMPORTANCE else DEFAULT_CATEGORY  # type: ignore[return-value]


def normalise_value(value: str) -> str:
    """Comparison form: case-folded, whitespace collapsed, leading article and trailing
    punctuation dropped ("The Netherlands." == "netherlands")."""
    text = re.sub(r"\s+", " ", (value or "").strip().casefold()).strip(" .,!;:\"'")
    return re.sub(r"^(?:a|an|the) ", "", text)
