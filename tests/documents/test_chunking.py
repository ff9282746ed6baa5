"""Chunking rules (services/documents/chunking.py): sections and heading paths, paragraph merging,
sentence-boundary splitting, offsets that slice the normalised text, positionPercent."""

from __future__ import annotations

import re

from agent_memory.services.documents.chunking import (
    MAX_CHARS,
    chunk,
    content_hash,
    first_heading,
    looks_like_markdown,
    normalise,
)

HANDBOOK = """# Handbook

Welcome to the team handbook.

## Travel

Book trips through the travel portal.

### Expenses

Submit receipts within 30 days.

## Leave

Ask your manager first.
"""


def chunks_of(text: str, fmt: str = "markdown"):
    norm = normalise(text)
    out = chunk(norm, fmt)
    for c in out:
        assert norm[c.offset:c.offset + len(c.text)] == c.text  # every chunk is an exact slice
        assert c.text == c.text.strip() and c.text
        assert len(c.text) <= MAX_CHARS
    assert [c.ordinal for c in out] == list(range(len(out)))
    assert [c.offset for c in out] == sorted(c.offset for c in out)
    return norm, out


def test_markdown_headings_give_each_chunk_its_heading_path():
    _, out = chunks_of(HANDBOOK)
    assert [(c.heading_path, c.text) for c in out] == [
        (("Handbook",), "Welcome to the team handbook."),
        (("Handbook", "Travel"), "Book trips through the travel portal."),
        (("Handbook", "Travel", "Expenses"), "Submit receipts within 30 days."),
        (("Handbook", "Leave"), "Ask your manager first."),  # a sibling replaces the deeper path
    ]


def test_setext_headings_code_fences_and_closing_hashes():
    text = ("Guide\n=====\n\nIntro text.\n\nSetup ##\n-----\n\n```sh\n# not a heading\n\nmake\n```\n\n"
            "## Usage ##\n\nRun it.\n")
    _, out = chunks_of(text)
    assert [c.heading_path for c in out] == [("Guide",), ("Guide", "Setup ##"), ("Guide", "Usage")]
    assert "# not a heading" in out[1].text and "make" in out[1].text


def test_thematic_break_separates_paragraphs_and_is_no_block_of_its_own():
    # Small paragraphs merge, and a chunk is an exact slice, so a break between them stays inside.
    _, out = chunks_of("One.\n\n---\n\nTwo.\n")
    assert [c.text for c in out] == ["One.\n\n---\n\nTwo."]
    # A break is never a chunk or part of one on its own: at the edges it is dropped...
    _, out = chunks_of("---\n\nOne.\n\n***\n")
    assert [c.text for c in out] == ["One."]
    # ...and where the paragraphs are split it lies in neither chunk.
    norm = normalise("One.\n\n---\n\nTwo.\n")
    assert [(c.offset, c.text) for c in chunk(norm, "markdown", max_chars=8)] == [(0, "One."), (11, "Two.")]


def test_plain_text_has_no_headings():
    _, out = chunks_of("# not a heading in text\n\nBody.", fmt="text")
    assert out[0].heading_path == () and out[0].text.startswith("# not a heading")


def test_small_paragraphs_merge_up_to_the_limit_but_never_across_sections():
    paragraphs = [f"Paragraph {i} " + "x" * 180 + "." for i in range(12)]
    text = "# A\n\n" + "\n\n".join(paragraphs) + "\n\n# B\n\nTiny."
    norm, out = chunks_of(text)
    a = [c for c in out if c.heading_path == ("A",)]
    assert len(a) == 2  # 12 x ~195 chars: six to a chunk of <= 1200 characters
    assert all(len(c.text) > 800 for c in a)
    assert [c.text for c in out if c.heading_path == ("B",)] == ["Tiny."]
    body = re.sub(r"\s+", "", "".join(paragraphs))
    assert re.sub(r"\s+", "", "".join(c.text for c in a)) == body  # nothing lost, nothing repeated


def test_long_paragraph_splits_at_sentence_boundaries_into_even_pieces():
    sentences = [f"Sentence {i} talks about expense policy details." for i in range(100)]
    paragraph = " ".join(sentences)
    norm, out = chunks_of(paragraph, fmt="text")
    assert len(paragraph) > 4000 and len(out) == -(-len(paragraph) // MAX_CHARS)
    for c in out:
        assert c.text.endswith(".") and c.text.startswith("Sentence")  # whole sentences only
        assert len(c.text) >= MAX_CHARS // 2
    assert " ".join(c.text for c in out) == paragraph


def test_a_sentence_longer_than_the_limit_is_cut_at_whitespace_else_hard():
    words = " ".join(["word"] * 700)  # 3499 chars, no sentence end
    _, out = chunks_of(words, fmt="text")
    assert all(not c.text.endswith("wor") for c in out) and len(out) == 3
    blob = "x" * 3000
    _, out = chunks_of(blob, fmt="text")
    assert [len(c.text) for c in out] == [1200, 1200, 600]


def test_lines_of_a_long_list_are_split_points():
    items = "\n".join(f"- item {i} with some descriptive words here" for i in range(80))
    _, out = chunks_of("# List\n\n" + items)
    assert len(out) > 1 and all(c.text.startswith("- item") for c in out)


def test_offsets_and_position_percent():
    norm, out = chunks_of(HANDBOOK)
    assert out[0].offset == norm.index("Welcome")
    for c in out:
        assert c.position_percent == c.offset * 100 // len(norm)
    norm, plain = chunks_of("First paragraph.\n\n" + "Filler sentence here. " * 200 + "\n\nLast.", fmt="text")
    assert plain[0].position_percent == 0
    assert 50 < plain[-1].position_percent < 100 and plain[-1].text.endswith("Last.")
    assert [c.position_percent for c in plain] == sorted(c.position_percent for c in plain)


def test_normalisation_and_content_hash():
    a = "\ufeffCafe\u0301 menu  \r\nline two\t\r\n\r\n\r\n"
    b = "Caf\u00e9 menu\nline two"
    assert normalise(a) == b
    assert content_hash(normalise(a)) == content_hash(b) and len(content_hash(b)) == 64
    assert content_hash(normalise("other")) != content_hash(b)
    assert chunk(normalise("   \n\n "), "text") == []


def test_markdown_detection_and_first_heading():
    assert looks_like_markdown("intro\n\n## Section\n\ntext")
    assert not looks_like_markdown("#hashtag is not a heading\n\nplain")
    assert first_heading(normalise(HANDBOOK)) == "Handbook"
    assert first_heading("no headings") is None
