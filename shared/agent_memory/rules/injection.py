"""Stored text that tries to steer a model (fsck's ``injection`` check, docs/memory-care.md).

Three families, each a list of (name, pattern): instructions hidden in remembered content
("ignore all previous instructions", "you are now ...", "reveal your system prompt"), chat
role markers (``system:`` at a line start, ``<|im_start|>``, ``[INST]``, ``<system>``), and
tool-call look-alikes (``<tool_call>``, ``"function_call":``, ``"tool_calls":``,
``<function=...>``). A finding names the first family and pattern that matched.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE | re.MULTILINE

PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("instruction", "ignore previous instructions",
     re.compile(r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|your|the)"
                r"\b[^.\n]{0,20}\b(instructions?|prompts?|rules|directions|guidelines)\b", _I)),
    ("instruction", "new identity", re.compile(r"\byou are now\b|\bfrom now on,? you (are|will|must)\b", _I)),
    ("instruction", "system prompt request",
     re.compile(r"\b(reveal|print|show|repeat|output)\b[^.\n]{0,30}\bsystem prompt\b", _I)),
    ("instruction", "act as", re.compile(r"\b(act|behave) as (an? )?(unrestricted|jailbroken|dan)\b", _I)),
    ("role_marker", "role prefix", re.compile(r"^\s*(system|assistant|developer)\s*:", _I)),
    ("role_marker", "chat template token",
     re.compile(r"<\|(im_start|im_end|system|assistant|user|endoftext)\|>|\[/?INST\]|<</?SYS>>", _I)),
    ("role_marker", "role tag", re.compile(r"</?(system|assistant|developer)>", _I)),
    ("tool_call", "tool call tag", re.compile(r"</?(tool_call|function_call|tool_use)\b", _I)),
    ("tool_call", "tool call json", re.compile(r"\"(function_call|tool_calls|tool_use)\"\s*:", _I)),
    ("tool_call", "function tag", re.compile(r"<function\s*=", _I)),
)


def injection_reason(text: str) -> tuple[str, str] | None:
    """``(family, pattern name)`` of the first pattern ``text`` matches, or ``None``."""
    if not text:
        return None
    for family, name, pattern in PATTERNS:
        if pattern.search(text):
            return family, name
    return None
