"""The keyword index of a context's documents: terms and phrases extracted from each document
when it becomes ``ready``, with how many documents carry each (docs/documents.md, "Keywords").

Extraction (``extract``, pure and deterministic: the same text gives the same keywords):

1. the text is NFKC-normalised and case-folded; words are runs of letters and digits (an
   inner apostrophe or hyphen kept, a trailing possessive ``'s`` dropped);
2. a word is a *candidate* unless it is a stop word (``lexicon.KEYWORD_STOP_WORDS``), shorter
   than ``MIN_WORD_CHARS`` letters, or has no letter (a number, a date);
3. *unigrams* are the candidate words; *bigrams* are two candidates next to each other in
   the same sentence (no stop word, punctuation or line break between them); a bigram is
   kept only when it occurs at least ``MIN_BIGRAM_COUNT`` times in the document;
4. each term's weight is its count in the document times its length in words (a repeated
   phrase outweighs either of its words alone); ``score`` is the weight over the document's
   best weight (the top keyword scores 1.0), rounded to four places;
5. the document's keywords are its ``KEYWORDS_PER_DOCUMENT`` best terms by weight, ties by
   the normalised form; ``text`` is the term's most frequent spelling as written (ties: the
   first seen), ``normalised`` the folded form (words joined by one space), which keys it.

Stored rows (``kernel.storage_keys``): one ``keyword`` row per normalised term in the context
(``keywords_pk``) holding its document count per scope set (``counts``, keyed by
``scope_sig``, with the scope sets in ``scopeSets``) so that a reader counts only the documents
it may read; one ``keyword-document`` row per (term, document) (``keyword_documents_pk``);
one ``document-keyword`` row per term of a document (``document_keywords_pk``), which is what
``GET /documents/{id}/keywords`` reads and what a delete walks to take the document out of
the index. Each term of a document is added (or removed) in one transaction of those three
rows, the ``keyword`` row under its version, so concurrent documents sharing a term count right.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent_memory import lexicon
from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.storage_keys import scope_sig
from agent_memory.models.document_records import Document, DocumentKeyword, Keyword, KeywordDocument
from agent_memory.models.records import NumberedPage
from agent_memory.ports import Condition, ConditionFailed, Delete, Put, Record, RecordStore
from agent_memory.services import paging

KEYWORDS_PER_DOCUMENT = 20
MIN_WORD_CHARS = 3
MIN_BIGRAM_COUNT = 2
MAX_KEYWORD_CHARS = 200
COMMIT_ATTEMPTS = 8
KEYWORDS_READ = 20_000  # keyword rows read to list or search (a context's whole index, bounded)
DOCUMENTS_PER_KEYWORD = 1000  # documents listed under one keyword

_SENTENCE = re.compile(r"[.!?;:\n\r\u2026()\[\]{}\"\u201c\u201d|/\\]+")
_WORD = re.compile(r"[^\W_](?:[\w'\u2019-]*[^\W_])?")


@dataclass(frozen=True)
class ExtractedKeyword:
    normalised: str
    text: str
    score: float
    weight: int


def normalise(term: str) -> str:
    """A term as the index keys it: NFKC, case-folded, words joined by one space."""
    words = [_fold_word(w) for w in _WORD.findall(unicodedata.normalize("NFKC", term))]
    return " ".join(w for w in words if w)


def _fold_word(word: str) -> str:
    word = word.casefold().replace("\u2019", "'")
    if word.endswith("'s"):
        word = word[:-2]
    return word.strip("'-")


def _surface(word: str) -> str:
    """A word as written, without a possessive ``'s`` or edge apostrophes and hyphens."""
    word = word.replace("\u2019", "'")
    if word.lower().endswith("'s"):
        word = word[:-2]
    return word.strip("'-")


def _candidate(word: str) -> bool:
    return (len(word) >= MIN_WORD_CHARS and word not in lexicon.KEYWORD_STOP_WORDS
            and any(ch.isalpha() for ch in word))


def extract(texts: Iterable[str], limit: int = KEYWORDS_PER_DOCUMENT) -> list[ExtractedKeyword]:
    """A document's keywords (its text given in pieces, e.g. its chunks), best first.

    Words and adjacent pairs are counted as written (C-level counting), each distinct spelling
    is folded once, and spellings are gathered for the kept terms alone."""
    raw_words: Counter[str] = Counter()
    raw_pairs: Counter[tuple[str, str]] = Counter()
    for text in texts:
        for sentence in _SENTENCE.split(unicodedata.normalize("NFKC", text)):
            words = _WORD.findall(sentence)
            raw_words.update(words)
            raw_pairs.update(itertools.pairwise(words))
    folded_of: dict[str, str | None] = {}  # a spelling -> its folded form, None: not a candidate
    counts: Counter[str] = Counter()
    for word, n in raw_words.items():
        f = _fold_word(word)
        folded_of[word] = f = f if _candidate(f) else None
        if f is not None:
            counts[f] += n
    for (a, b), n in raw_pairs.items():
        fa, fb = folded_of[a], folded_of[b]
        if fa is not None and fb is not None:
            counts[f"{fa} {fb}"] += n
    weights = {term: n * (term.count(" ") + 1) for term, n in counts.items()
               if (" " not in term or n >= MIN_BIGRAM_COUNT) and len(term) <= MAX_KEYWORD_CHARS}
    best = sorted(weights, key=lambda t: (-weights[t], t))[:limit]
    if not best:
        return []
    top = weights[best[0]]
    # The spellings of the kept terms only (first-seen order: ties go to the first spelling).
    spellings: dict[str, Counter[str]] = {term: Counter() for term in best}
    for word, n in raw_words.items():
        f = folded_of[word]
        if f in spellings:
            spellings[f][_surface(word)] += n
    if any(" " in term for term in best):
        for (a, b), n in raw_pairs.items():
            fa, fb = folded_of[a], folded_of[b]
            if fa is not None and fb is not None and f"{fa} {fb}" in spellings:
                spellings[f"{fa} {fb}"][f"{_surface(a)} {_surface(b)}"] += n
    out = []
    for term in best:
        spelled = spellings[term]
        text = max(spelled, key=lambda sp: spelled[sp])  # the first seen of the most frequent
        out.append(ExtractedKeyword(term, text, round(weights[term] / top, 4), weights[term]))
    return out


# --- the index ------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeywordView:
    """A keyword as a reader sees it: ``document_count`` counts the documents it may read."""

    normalised: str
    text: str
    document_count: int
    score: float = 0.0


@dataclass(frozen=True)
class KeywordDetailView:
    keyword: KeywordView
    documents: list[KeywordDocument]


def visible_count(keyword: Keyword, read_region: Sequence[str] | None) -> int:
    sets = keyword.scope_sets or {}
    return sum(n for sig, n in (keyword.counts or {}).items()
               if n > 0 and scope_lib.visible(sets.get(sig) or [], read_region))


class KeywordIndex:
    """Adds a ready document's keywords to the context's index, removes a deleted one's, and
    answers the keyword routes (``GET /documents/keywords`` and the rest)."""

    def __init__(self, store: RecordStore, cursor_secret: cursor.CursorSecret):
        self.store = store
        self._cursor_secret = cursor_secret

    # --- writes ----------------------------------------------------------------------------

    def add_document(self, ctx: RequestContext, doc: Document, texts: Iterable[str]) -> int:
        """Index ``doc``'s keywords (extracted from ``texts``); returns how many it has.
        Idempotent: a term already indexed for the document with the same score is skipped;
        one it no longer has, or with another score (a document ingested again), is replaced."""
        found = extract(texts)
        wanted = {kw.normalised: kw for kw in found}
        for record in self._rows(keys.document_keywords_pk(ctx, doc.id)):
            kept = wanted.get(record.sk)
            if kept is None or DocumentKeyword.from_item(record.data).score != kept.score:
                self._remove(ctx, doc.id, record)
        for kw in found:
            self._add(ctx, doc, kw)
        return len(found)

    def _rows(self, pk: str) -> list[Record]:
        out: list[Record] = []
        after = None
        while True:
            page = self.store.query(pk, after=after, limit=100)
            out += page.records
            if page.last_key is None or not page.records:
                return out
            after = page.last_key

    def _add(self, ctx: RequestContext, doc: Document, kw: ExtractedKeyword) -> None:
        sig = scope_sig(doc.scopes or [])
        pk = keys.keywords_pk(ctx)
        for _ in range(COMMIT_ATTEMPTS):
            current = self.store.get(pk, kw.normalised)
            if current is None:
                keyword = Keyword(normalised=kw.normalised, text=kw.text, counts={sig: 1},
                                  scope_sets={sig: doc.scopes or []})
                head = Put(Record(pk, kw.normalised, keyword.to_item()), Condition.absent())
            else:
                keyword = Keyword.from_item(current.data)
                counts = dict(keyword.counts or {})
                counts[sig] = counts.get(sig, 0) + 1
                keyword = replace(keyword, counts=counts, scope_sets={**(keyword.scope_sets or {}),
                                                                      sig: doc.scopes or []})
                head = Put(Record(pk, kw.normalised, keyword.to_item(), version=current.version + 1),
                           Condition.version_is(current.version))
            mine = DocumentKeyword(document_id=doc.id, normalised=kw.normalised, text=kw.text, score=kw.score,
                                   scope_sig=sig)
            member = KeywordDocument(document_id=doc.id, normalised=kw.normalised, title=doc.title,
                                     score=kw.score, document_scopes=doc.scopes or [], scope_sig=sig)
            try:
                self.store.transact([
                    Put(Record(keys.document_keywords_pk(ctx, doc.id), kw.normalised, mine.to_item()),
                        Condition.absent()),
                    Put(Record(keys.keyword_documents_pk(ctx, kw.normalised), doc.id, member.to_item()),
                        Condition.absent()),
                    head,
                ])
                return
            except ConditionFailed:
                if self.store.get(keys.document_keywords_pk(ctx, doc.id), kw.normalised) is not None:
                    return  # indexed by an earlier delivery
        raise ConditionFailed(f"keyword {kw.normalised!r} kept changing; retry")

    def remove_document(self, ctx: RequestContext, doc_id: str) -> None:
        """Take a document out of the index (its terms' counts drop; a term no document
        carries any more is removed)."""
        pk = keys.document_keywords_pk(ctx, doc_id)
        while True:
            page = self.store.query(pk, limit=100)
            if not page.records:
                return
            for record in page.records:
                self._remove(ctx, doc_id, record)

    def _remove(self, ctx: RequestContext, doc_id: str, mine: Record) -> None:
        normalised = mine.sk
        member_key = (keys.keyword_documents_pk(ctx, normalised), doc_id)
        sig = DocumentKeyword.from_item(mine.data).scope_sig
        pk = keys.keywords_pk(ctx)
        for _ in range(COMMIT_ATTEMPTS):
            current = self.store.get(pk, normalised)
            ops: list[Any] = [Delete(mine.pk, mine.sk), Delete(*member_key)]
            if current is not None:
                keyword = Keyword.from_item(current.data)
                counts = dict(keyword.counts or {})
                counts[sig] = counts.get(sig, 0) - 1
                if counts[sig] <= 0:
                    counts.pop(sig)
                if not counts:
                    ops.append(Delete(pk, normalised, Condition.version_is(current.version)))
                else:
                    sets = {s: v for s, v in (keyword.scope_sets or {}).items() if s in counts}
                    ops.append(Put(Record(pk, normalised, replace(keyword, counts=counts, scope_sets=sets).to_item(),
                                          version=current.version + 1), Condition.version_is(current.version)))
            try:
                self.store.transact(ops)
                return
            except ConditionFailed:
                continue
        raise ConditionFailed(f"keyword {normalised!r} kept changing; retry")

    # --- reads -----------------------------------------------------------------------------

    def keywords(self, ctx: RequestContext) -> list[KeywordView]:
        """Every keyword of the context with at least one document ``ctx`` may read, in
        normalised order (at most ``KEYWORDS_READ`` rows read)."""
        out: list[KeywordView] = []
        after = None
        read = 0
        while read < KEYWORDS_READ:
            page = self.store.query(keys.keywords_pk(ctx), after=after, limit=500)
            for record in page.records:
                keyword = Keyword.from_item(record.data)
                count = visible_count(keyword, ctx.read_region)
                if count:
                    out.append(KeywordView(keyword.normalised, keyword.text, count))
            read += len(page.records)
            after = page.last_key
            if not after or not page.records:
                break
        return out

    def page(self, ctx: RequestContext, *, q: str | None, min_document_count: int, sort: str, limit: int,
             page_cursor: str | None, page: int | None) -> NumberedPage[KeywordView]:
        """``GET /documents/keywords``: keywords whose normalised form contains ``q``'s
        (normalised), carried by at least ``min_document_count`` readable documents, most
        documents first (``sort="documentCount"``, ties alphabetical) or alphabetical
        (``sort="normalised"``); paged by number or cursor (``paging.numbered``)."""
        needle = normalise(q) if q else ""
        rows = [v for v in self.keywords(ctx) if v.document_count >= min_document_count and needle in v.normalised]
        if sort == "documentCount":
            keyed = [(f"{10**9 - min(v.document_count, 10**9 - 1):010d}#{v.normalised}", v) for v in rows]
            keyed.sort(key=lambda kv: kv[0])
        else:
            keyed = [(v.normalised, v) for v in rows]
        return paging.numbered(self._cursor_secret, ctx.context_id, f"keywords:{sort}:{needle}:{min_document_count}",
                               keyed, page=page, page_size=limit, page_cursor=page_cursor)

    def keyword(self, ctx: RequestContext, normalised: str) -> KeywordDetailView | None:
        """One keyword (by its normalised form, or any spelling of it) with the documents
        ``ctx`` may read that carry it, best scored first; ``None`` when it has none."""
        norm = normalise(normalised)
        if not norm or len(norm) > MAX_KEYWORD_CHARS:
            return None
        record = self.store.get(keys.keywords_pk(ctx), norm)
        if record is None:
            return None
        keyword = Keyword.from_item(record.data)
        members = [KeywordDocument.from_item(r.data)
                   for r in self.store.query(keys.keyword_documents_pk(ctx, norm), limit=DOCUMENTS_PER_KEYWORD).records]
        members = [m for m in members if scope_lib.visible(m.document_scopes or [], ctx.read_region)]
        if not members:
            return None
        members.sort(key=lambda m: (-m.score, m.document_id))
        return KeywordDetailView(KeywordView(keyword.normalised, keyword.text, len(members)), members)

    def for_document(self, ctx: RequestContext, doc_id: str) -> list[DocumentKeyword]:
        """A document's keywords, best first (the caller checked it may read the document)."""
        rows = [DocumentKeyword.from_item(r.data)
                for r in self.store.query(keys.document_keywords_pk(ctx, doc_id), limit=KEYWORDS_PER_DOCUMENT * 5).records]
        return sorted(rows, key=lambda k: (-k.score, k.normalised))

    def search(self, ctx: RequestContext, query: str, *, k: int, threshold: float | None) -> list[KeywordView]:
        """Keywords that match ``query``'s words, best first. A keyword's ``score`` is the
        share of its words found among the query's (each query word matches a keyword word
        it equals, or starts when at least four letters long) times the share of the query's
        words it covers, so an exact match scores 1.0; ties by document count, then form."""
        wanted = [w for w in normalise(query).split() if w]
        if not wanted:
            return []
        scored: list[KeywordView] = []
        for view in self.keywords(ctx):
            words = view.normalised.split()
            hits = {i for i, w in enumerate(words) for q in wanted if w == q or (len(q) >= 4 and w.startswith(q))}
            covered = {q for q in wanted for w in words if w == q or (len(q) >= 4 and w.startswith(q))}
            if not hits:
                continue
            score = round(len(hits) / len(words) * len(covered) / len(wanted), 4)
            if threshold is not None and score < threshold:
                continue
            scored.append(replace(view, score=score))
        scored.sort(key=lambda v: (-v.score, -v.document_count, v.normalised))
        return scored[:k]
