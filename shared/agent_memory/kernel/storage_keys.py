"""Record-store key conventions, in one place.

Every key starts with the context and the partition, so nothing is ever read across a
context or a partition. ``pk`` names a collection, ``sk`` gives the order it pages by:

=========================  ===========================================  =====================
collection                 pk                                           sk
=========================  ===========================================  =====================
sessions                   ``c#<ctx>#<part>#sessions``                  ``<session id>``
turns of a session         ``c#<ctx>#<part>#turns#<session id>``        ``<seq, 12 digits>``
idempotency records        ``c#<ctx>#<part>#idem#<shard, 0-f>``         ``<scope>#<caller>#<key>``
replies naming a record    ``c#<ctx>#<part>#idem-ref#<record id>``      ``ref``
=========================  ===========================================  =====================

Secondary order (gsi1): a turn by id (``gsi1pk = c#<ctx>#<part>#turn-ids``, ``gsi1sk = <turn id>``).
Later collections (facts, threads, documents, traces) add their rows here.
"""

from __future__ import annotations

import hashlib
from typing import Protocol


class Place(Protocol):
    """What every key starts with: a context and a partition. A request's ``RequestContext``
    is one (the kernel names no caller type, so nothing above it is imported here)."""

    @property
    def context_id(self) -> str: ...

    @property
    def partition(self) -> str: ...


def base(ctx: Place) -> str:
    return base_of(ctx.context_id, ctx.partition)


def base_of(context_id: str, partition: str) -> str:
    """``base`` from the two values (a projected unit carries them, not a request context)."""
    return f"c#{context_id}#{partition}"


def sessions_pk(ctx: Place) -> str:
    return f"{base(ctx)}#sessions"


def turns_pk(ctx: Place, session_id: str) -> str:
    return f"{base(ctx)}#turns#{session_id}"


def turn_sk(seq: int) -> str:
    return f"{seq:012d}"


def turn_ids_gsi(ctx: Place) -> str:
    return f"{base(ctx)}#turn-ids"


IDEMPOTENCY_SHARDS = 16


def idempotency_pk(ctx: Place, sk: str) -> str:
    """The shard of the idempotency record ``sk`` (``<scope>#<caller>#<key>``): a record is only
    ever read by its key, so the context's idempotent writes spread over 16 partitions."""
    shard = hashlib.sha256(sk.encode("utf-8", "surrogatepass")).digest()[0] % IDEMPOTENCY_SHARDS
    return f"{base(ctx)}#idem#{shard:x}"


def idempotency_pks(ctx: Place) -> list[str]:
    """Every shard of the context's idempotency records (maintenance and tests)."""
    return [f"{base(ctx)}#idem#{shard:x}" for shard in range(IDEMPOTENCY_SHARDS)]


def idempotency_ref_pk(ctx: Place, record_id: str) -> str:
    """The index row listing the stored replies that mention ``record_id`` (forget reads it)."""
    return f"{base(ctx)}#idem-ref#{record_id}"


# --- memory graph -----------------------------------------------------------------------
#
# entities           c#<ctx>#<part>#entities          <type>/<name>
# attributes         c#<ctx>#<part>#attrs#<entity>    a#<key>#<attr id>          (history, oldest first)
#   head rows        c#<ctx>#<part>#attrs#<entity>    h#<key>#<scope sig>[#<value>]  (current pointer)
# relations          c#<ctx>#<part>#rels#<subject>    a#<label>#<rel id>
#   head rows        c#<ctx>#<part>#rels#<subject>    h#<label>#<scope sig>[#<object>]
# actions            c#<ctx>#<part>#actions           <occurred at>#<act id>
# references         c#<ctx>#<part>#refs#<entity>     <kind>#<row id>            (-> a row elsewhere)
# instructions       c#<ctx>#<part>#instructions      <instr id>
# uncertainties      c#<ctx>#<part>#uncertainties     <unc id>
#
# A reference row points at a row outside the entity's own partitions that names it (a
# relation to it, stored under its subject; an action it is the actor of; an uncertainty about
# it), with that row's scopes, written with the row: ``DELETE /entities`` reads the entity's
# partitions and its references, never another entity's rows.
#
# Head rows serialise writers of one single-valued (entity, key, scope): superseding the
# current value and inserting the new one is one transaction conditioned on the head's
# version, so concurrent corrections leave exactly one current value and an unbroken chain.
# For multi-valued keys the head is per value, which makes "same value again" race-free.
#
# gsi1 holds CURRENT facts only (the attribute is removed when a fact is superseded, closed
# or deleted): gsi1pk c#<ctx>#<part>#current#attribute|relation, gsi1sk <category>#<entity>#<key>#<id>.
# /state and the collections page through it.

def entities_pk(ctx: Place) -> str:
    return f"{base(ctx)}#entities"


def entity_sk(entity_id: str) -> str:
    return entity_id.removeprefix("entity:")


def attrs_pk(ctx: Place, entity_id: str) -> str:
    return f"{base(ctx)}#attrs#{entity_id}"


def rels_pk(ctx: Place, subject: str) -> str:
    return f"{base(ctx)}#rels#{subject}"


def fact_sk(key: str, fact_id: str) -> str:
    return f"a#{key}#{fact_id}"


def scope_sig(scopes: list[list[str]]) -> str:
    """A scope DNF's short signature in sort keys (a fact's head row, a document's hash row):
    ``-`` unscoped. Here, not with the facts repository, so the documents service keys its rows
    without importing the fact-kind registry and the extraction models (a cold start's cost)."""
    if not scopes:
        return "-"
    return hashlib.sha1(repr(scopes).encode()).hexdigest()[:12]


def head_sk(key: str, scope_sig: str, value: str | None = None) -> str:
    return f"h#{key}#{scope_sig}" + (f"#{value}" if value is not None else "")


def current_gsi(ctx: Place, kind: str) -> str:
    return f"{base(ctx)}#current#{kind}"


def refs_pk(ctx: Place, entity_id: str) -> str:
    return f"{base(ctx)}#refs#{entity_id}"


def ref_sk(kind: str, row_id: str) -> str:
    return f"{kind}#{row_id}"


def actions_pk(ctx: Place) -> str:
    return f"{base(ctx)}#actions"


def instructions_pk(ctx: Place) -> str:
    return f"{base(ctx)}#instructions"


def uncertainties_pk(ctx: Place) -> str:
    return f"{base(ctx)}#uncertainties"


# --- threads ----------------------------------------------------------------------------
#
# thread rows        c#<ctx>#<part>#threads                  <thread id>     (counter + reader list)
# thread turns       c#<ctx>#<part>#thread-turns#<thread id>  <turn index, 12 digits>
# turn text parts    c#<ctx>#<part>#thread-parts#<thread id>  <turn index>#<part, 3 digits>
# audit records      c#<ctx>#<part>#audit                    <at>#<audit id>  (admin bypasses)
#
# A thread row is the turn counter: an append bumps it under a version condition in the same
# transaction as the new turn row, so turn indexes are dense and never shared. Turn text over
# what one item holds is split into part rows written in that transaction too.

def threads_pk(ctx: Place) -> str:
    return f"{base(ctx)}#threads"


def thread_turns_pk(ctx: Place, thread_id: str) -> str:
    return f"{base(ctx)}#thread-turns#{thread_id}"


def thread_turn_sk(turn_index: int) -> str:
    return f"{turn_index:012d}"


def thread_parts_pk(ctx: Place, thread_id: str) -> str:
    return f"{base(ctx)}#thread-parts#{thread_id}"


def thread_part_sk(turn_index: int, part: int) -> str:
    return f"{turn_index:012d}#{part:03d}"


def audit_pk(ctx: Place) -> str:
    return f"{base(ctx)}#audit"


# --- documents --------------------------------------------------------------------------
#
# document rows      c#<ctx>#<part>#docs                  <doc id>
# chunk rows         c#<ctx>#<part>#chunks#<doc id>       <ordinal, 6 digits>
# content hashes     c#<ctx>#<part>#doc-hashes            <sha256>#<scope sig>   (-> document id)
#
# A document's text lives only in its chunk rows (a 5 MiB document cannot be one item). The
# content-hash row is created with the document row, conditioned on absence, so concurrent
# uploads of the same content in the same scopes resolve to one document.

def documents_pk(ctx: Place) -> str:
    return f"{base(ctx)}#docs"


def chunks_pk(ctx: Place, document_id: str) -> str:
    return f"{base(ctx)}#chunks#{document_id}"


def chunk_sk(ordinal: int) -> str:
    return f"{ordinal:06d}"


# A 5 MiB document's sources are stored by one request, about 22,000 WCU of part rows in
# transactions (bench/partition_heat.py): over 32 partitions each takes about 700 of them, under
# DynamoDB's 1,000 a second even were the whole upload written within one second.
DOCUMENT_PART_SHARDS = 32


def document_parts_pk(ctx: Place, document_id: str, ordinal: int = 0) -> str:
    """The stored source of a document's chunks, awaiting extraction (one row per chunk), in
    the shard of chunk ``ordinal`` (``document_parts_pks``: every shard)."""
    return f"{base(ctx)}#doc-parts#{document_id}#{ordinal % DOCUMENT_PART_SHARDS:x}"


def document_parts_pks(ctx: Place, document_id: str) -> list[str]:
    return [document_parts_pk(ctx, document_id, shard) for shard in range(DOCUMENT_PART_SHARDS)]


def document_hashes_pk(ctx: Place) -> str:
    return f"{base(ctx)}#doc-hashes"


# The keyword index (services/documents/keywords.py):
#
# keywords             c#<ctx>#<part>#keywords                       <normalised term>
# a keyword's docs     c#<ctx>#<part>#keyword-docs#<term digest>     <document id>
# a document's terms   c#<ctx>#<part>#doc-keywords#<document id>     <normalised term>

def keywords_pk(ctx: Place) -> str:
    return f"{base(ctx)}#keywords"


def keyword_documents_pk(ctx: Place, normalised: str) -> str:
    # A digest: a term may hold characters and lengths a key should not.
    return f"{base(ctx)}#keyword-docs#{hashlib.sha1(normalised.encode()).hexdigest()[:20]}"


def document_keywords_pk(ctx: Place, document_id: str) -> str:
    return f"{base(ctx)}#doc-keywords#{document_id}"


# --- catalogue --------------------------------------------------------------------------
#
# contexts           contexts                        <context id>      (one row per context written to)
# partitions         contexts#<ctx>#partitions       <partition>       (one row per partition written to)
#
# The pickers of the inspector page through these (``GET /api/v1/contexts``); a write notes
# its context and partition once per process (services/operations/catalogue.py). Neither starts with
# ``c#<ctx>#``, so what scans or deletes a context's rows by that prefix never sees them.

CONTEXTS_PK = "contexts"


# --- the scope index (services/operations/scope_index.py) ---------------------------------
#
# membership rows     c#<ctx>#<part>#scope-members#<shard, 0-f>   <scope path>/#<digest of the record's key>
# backfill progress   c#~scope-index                               backfill
#
# One membership row per distinct scope path of each record scope forget may take, written in
# the record's transaction; ``<path>/`` is a prefix of the rows of the path and of the paths
# below it. The shard is a digest of the record's key: a busy scope spreads over 16 keys.

SCOPE_MEMBER_SHARDS = 16
SCOPE_INDEX_STATE = ("c#~scope-index", "backfill")


def scope_members_pk(base_key: str, shard: int) -> str:
    """A shard of a context's membership rows; ``base_key`` is ``base`` (``c#<ctx>#<part>``)."""
    return f"{base_key}#scope-members#{shard:x}"


def scope_member_sk(path: str, record_digest: str) -> str:
    return f"{path}/#{record_digest}"


def partitions_pk(context_id: str) -> str:
    return f"contexts#{context_id}#partitions"
