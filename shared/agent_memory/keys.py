"""Record-store key conventions, in one place.

Every key starts with the context and the partition, so nothing is ever read across a
context or a partition. ``pk`` names a collection, ``sk`` gives the order it pages by:

=========================  ===========================================  =====================
collection                 pk                                           sk
=========================  ===========================================  =====================
sessions                   ``c#<ctx>#<part>#sessions``                  ``<session id>``
turns of a session         ``c#<ctx>#<part>#turns#<session id>``        ``<seq, 12 digits>``
idempotency records        ``c#<ctx>#<part>#idem``                      ``<scope>#<key>``
=========================  ===========================================  =====================

Secondary order (gsi1): a turn by id (``gsi1pk = c#<ctx>#<part>#turn-ids``, ``gsi1sk = <turn id>``).
Later collections (facts, threads, documents, traces) add their rows here.
"""

from __future__ import annotations

from agent_memory.request_context import RequestContext


def base(ctx: RequestContext) -> str:
    return f"c#{ctx.context_id}#{ctx.partition}"


def sessions_pk(ctx: RequestContext) -> str:
    return f"{base(ctx)}#sessions"


def turns_pk(ctx: RequestContext, session_id: str) -> str:
    return f"{base(ctx)}#turns#{session_id}"


def turn_sk(seq: int) -> str:
    return f"{seq:012d}"


def turn_ids_gsi(ctx: RequestContext) -> str:
    return f"{base(ctx)}#turn-ids"


def idempotency_pk(ctx: RequestContext) -> str:
    return f"{base(ctx)}#idem"
