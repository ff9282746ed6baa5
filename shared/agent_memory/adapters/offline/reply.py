"""The offline model's reply to a statement: it acknowledges what the offline extractor
parses from the message itself ("Noted: you work at Globex."), so the reply never waits on,
nor depends on, the write that stores the turn's facts. A message with a question in it, or
one the patterns parse nothing from, is answered from the retrieved memory as before
(``default_offline_responder``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_memory.adapters.offline.extractor import is_question, offline_extract, sentences
from agent_memory.models.extraction import ExtractedAttribute, ExtractedRelation, ExtractionOutput
from agent_memory.ports import ChatMessage
from agent_memory.rules.self_entity import SELF_NAME

# key -> (about the speaker, about someone else); {n} is the other's name, {v} the value.
_SAID: dict[str, tuple[str, str]] = {
    "name": ("your name is {v}", "{n}'s name is {v}"),
    "nickname": ("I'll call you {v}", "{n} goes by {v}"),
    "employer": ("you work at {v}", "{n} works at {v}"),
    "job_title": ("you work as {a} {v}", "{n} works as {a} {v}"),
    "location": ("you live in {v}", "{n} lives in {v}"),
    "hometown": ("you are from {v}", "{n} is from {v}"),
    "likes": ("you like {v}", "{n} likes {v}"),
    "dislikes": ("you dislike {v}", "{n} dislikes {v}"),
    "preferences": ("you prefer {v}", "{n} prefers {v}"),
    "allergies": ("you are allergic to {v}", "{n} is allergic to {v}"),
    "languages": ("you speak {v}", "{n} speaks {v}"),
    "interests": ("you are interested in {v}", "{n} is interested in {v}"),
    "pets": ("you have {a} {v}", "{n} has {a} {v}"),
    "age": ("you are {v}", "{n} is {v}"),
    "nationality": ("you are {v}", "{n} is {v}"),
    "diet": ("you are {v}", "{n} is {v}"),
    "species": ("{v}", "{n} is {a} {v}"),
}
_UNSAID: dict[str, tuple[str, str]] = {
    "employer": ("you no longer work at {v}", "{n} no longer works at {v}"),
    "job_title": ("you are no longer {a} {v}", "{n} is no longer {a} {v}"),
    "location": ("you no longer live in {v}", "{n} no longer lives in {v}"),
    "likes": ("you no longer like {v}", "{n} no longer likes {v}"),
}


def _article(value: str) -> str:
    if value[:1].isdigit() or value.split()[0].lower() in ("two", "three", "four", "five", "some"):
        return ""
    return "an" if value[:1].lower() in "aeiou" else "a"


def _attribute(a: ExtractedAttribute, dislikes: set[str]) -> str | None:
    me = a.entity == SELF_NAME
    if a.negated and a.key == "likes" and a.value.casefold() in dislikes:
        return None  # "I don't like olives": said once, as the dislike
    templates = (_UNSAID if a.negated else _SAID).get(a.key)
    if templates is None:
        words = a.key.replace("_", " ")
        if a.negated:
            line = f"your {words} is no longer {{v}}" if me else f"{{n}}'s {words} is no longer {{v}}"
        else:
            line = f"your {words} is {{v}}" if me else f"{{n}}'s {words} is {{v}}"
    else:
        line = templates[0 if me else 1]
    text = line.format(n=a.entity, v=a.value, a=_article(a.value)).replace("  ", " ")
    return f"perhaps {text}" if a.confidence < 0.5 else text


def _relation(r: ExtractedRelation) -> str:
    label = r.label.replace("_", " ")
    whose = "your" if r.subject == SELF_NAME else f"{r.subject}'s"
    if r.label == "pet":
        return ""  # said with the pet's kind ("you have a dog named Rex")
    return f"{r.object} is {'no longer ' if r.negated else ''}{whose} {label}"


def _instruction(description: str) -> str:
    """"Always answer in short sentences." -> "I'll always answer in short sentences"."""
    rule = re.sub(r"^(?i:please,? )|[.!]+$", "", description.strip())
    rule = re.sub(r"^(?i:from now on|going forward|in (?:the )?future),? (?:(?i:please),? )?", "", rule)
    lowered = rule[:1].lower() + rule[1:]
    negative = re.match(r"(?i:don't|do not)(?: ever)? (?P<rest>.+)", rule)
    if negative:
        return f"I won't {negative.group('rest')}"
    if re.match(r"(?i:always|never) ", rule) or re.match(r"[a-z]+ ", lowered):
        return f"I'll {lowered}"
    return f"I'll follow \"{rule}\""


def acknowledgement(out: ExtractionOutput) -> str | None:
    """"Noted: you work at Globex and you work as a data engineer." for what ``out`` holds;
    ``None`` when it holds nothing."""
    dislikes = {a.value.casefold() for a in out.attributes if a.key == "dislikes" and not a.negated}
    pets = {r.object: r for r in out.relations if r.label == "pet"}
    said = [line for line in (_relation(r) for r in out.relations) if line]
    titles = {a.entity: a for a in out.attributes if a.key == "job_title" and not a.negated}
    for a in out.attributes:
        if a.key == "species" and a.entity in pets:
            continue
        if a.key == "job_title" and not a.negated and any(
                e.key == "employer" and e.entity == a.entity and not e.negated for e in out.attributes):
            continue  # said with the employer
        if a.key == "employer" and not a.negated and a.entity in titles:
            title = titles[a.entity].value
            said.append((_attribute(a, dislikes) or "") + f" as {_article(title)} {title}".replace("  ", " "))
            continue
        if a.key == "pets" and pets:
            named = [n for n, r in pets.items() if r.subject == a.entity]
            if named:
                whose = "you have" if a.entity == SELF_NAME else f"{a.entity} has"
                article = _article(a.value)
                said.append(f"{whose} {article + ' ' if article else ''}{a.value} named {' and '.join(named)}")
                continue
        line = _attribute(a, dislikes)
        if line:
            said.append(line)
    said += [f"you {act.summary.split(' ', 1)[1]}" if act.actor == SELF_NAME and " " in act.summary
             else act.summary for act in out.actions]
    said += [_instruction(i.description) for i in out.instructions if i.label != "form_of_address"
             or not any(a.key == "nickname" for a in out.attributes)]
    if not said:
        return None
    listed = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
    return f"Noted: {listed}."


def statement_acknowledgement(message: str) -> str | None:
    """The acknowledgement of a message that asks nothing, from the offline extractor's
    parse of it; ``None`` for a question or a message it parses nothing from."""
    if any(is_question(s) for s in sentences(message)):
        return None
    return acknowledgement(offline_extract(message))


def offline_chat_responder(messages: Sequence[ChatMessage]) -> str:
    """The offline model's responder: a statement is acknowledged from its parse, anything
    else answered from the retrieved memory in the prompt."""
    from agent_memory.adapters.models.offline import default_offline_responder

    message = next((m.content for m in reversed(messages) if m.role == "user"), "")
    noted = statement_acknowledgement(message.removeprefix("# Question").strip())
    return noted if noted is not None else default_offline_responder(messages)
