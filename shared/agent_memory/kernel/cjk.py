"""Keyword terms for unsegmented scripts: Chinese, Japanese and Korean text as character
bigrams, what OpenSearch's ``cjk`` analyzer indexes (its ``cjk_bigram`` filter over the
standard tokenizer, after ``cjk_width``).

Both search adapters index and query through the same rule, so a keyword search for a
Chinese or Japanese term finds it on either: the embedded index stores ``cjk_bigrams(text)``
in its FTS5 column and turns query words the same way; the OpenSearch index analyses a
``text.cjk`` subfield with the ``cjk`` analyzer and queries it beside ``text``.

The rule: text is width-folded (NFKC: full-width Latin to ASCII, half-width katakana to
full-width, as ``cjk_width`` does); each run of Han, Hiragana, Katakana or Hangul characters
becomes its overlapping bigrams ("寿司店" -> "寿司 司店"); a run of one character stays a
unigram; any other character (a space, punctuation, Latin) ends a run; everything else is
left as it is.
"""

from __future__ import annotations

import re
import unicodedata

# Han (with extension A and compatibility ideographs), Hiragana, Katakana (and its phonetic
# extensions and the prolonged sound mark), Hangul syllables and jamo.
_CJK = (r"\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
        r"\u1100-\u11ff\u3130-\u318f\uac00-\ud7af")
_RUN = re.compile(f"[{_CJK}]+")
_ANY = re.compile(f"[{_CJK}]")


def has_cjk(text: str) -> bool:
    return bool(_ANY.search(text or ""))


def bigrams(run: str) -> list[str]:
    """The overlapping bigrams of one run (a single character is its own term)."""
    return [run] if len(run) < 2 else [run[i:i + 2] for i in range(len(run) - 1)]


def cjk_bigrams(text: str) -> str:
    """``text`` with each CJK run replaced by its bigrams, separated by spaces (text without
    CJK characters comes back unchanged, not even width-folded)."""
    if not has_cjk(text):
        return text
    folded = unicodedata.normalize("NFKC", text)
    return _RUN.sub(lambda m: " " + " ".join(bigrams(m.group(0))) + " ", folded)
