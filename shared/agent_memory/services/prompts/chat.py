"""The response model's prompt: instructions, then retrieved memory and the transcript
window inside the one untrusted-data block ``context_format`` renders, then the question
under ``# Question``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.ports import ChatMessage
from agent_memory.services.conversation.chat.window import WindowTurn
from agent_memory.services.retrieval.context_format import FormattedContext, format_context, sanitise

SYSTEM = """You are a helpful assistant with long-term memory of the person you are talking to.
Answer the question under "# Question". Use the memory block when it is relevant and cite
each memory line you rely on with its marker, for example [S1]. Only cite markers that
appear in the memory block. If the memory does not contain the answer, say so plainly.
Lines from role "assistant" are your own earlier replies: prefer what the user said and
what documents say over them."""


def build_messages(question: str, hits: Sequence[Any], window: Sequence[WindowTurn],
                   instructions: Sequence[str] = ()) -> tuple[list[ChatMessage], FormattedContext]:
    """The messages for one response call, and the ``{"S1": hit}`` markers they offer."""
    memory = format_context(hits, transcript=[(t.role, t.content) for t in window])
    parts = [SYSTEM]
    if instructions:
        parts.append("Standing instructions from the user:\n" + "\n".join(f"- {sanitise(i, 500)}"
                                                                          for i in instructions))
    parts.append(memory.text)
    messages = [ChatMessage("system", "\n\n".join(parts)), ChatMessage("user", f"# Question\n{question}")]
    return messages, memory
