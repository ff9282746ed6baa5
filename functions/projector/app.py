"""Projector: DynamoDB stream consumer (no route). A batch of changed records becomes one
index write holding each unit's newest state (``projection.collapse``). A record that cannot
be read is reported alone; a failed write reports the whole batch (partial batch response:
Lambda retries from the lowest reported record, then sends it to the dead-letter queue in
template.yaml). Each batch publishes how old its oldest record was (``ProjectionLag``) and
how many records failed (``ProjectionFailures``).

The stack's schedule also invokes it with ``{"redrive": "dead-letters"}``: once the index
answers again, the dead-lettered batches the stream still holds are re-projected from the
items' current state (``redrive_when_search_answers``), so an outage catches up without an
operator; batches older than the stream's 24 hours need ``agent-memory redrive`` (a reindex)."""

import logging
import time

from agent_memory.observability import count, instrumented
from agent_memory.runtime import get_runtime
from agent_memory.services.operations.projection import change_for

log = logging.getLogger("agent_memory.projector")
REDRIVE_MARGIN_MS = 20_000  # stop taking dead letters this long before the function's timeout


@instrumented(http=False)
def lambda_handler(event, lambda_context):
    if event.get("redrive") == "dead-letters":
        return _redrive(lambda_context)
    changes, read, failed = [], [], []
    oldest = None
    for raw in event.get("Records", []):
        images = raw.get("dynamodb") or {}
        sequence = images.get("SequenceNumber")
        created = images.get("ApproximateCreationDateTime")
        if created is not None:
            oldest = float(created) if oldest is None else min(oldest, float(created))
        try:
            new = get_runtime().stream_record(images["NewImage"]) if "NewImage" in images else None
            old = get_runtime().stream_record(images["OldImage"]) if "OldImage" in images else None
            changes.append(change_for(new, old))
            read.append(sequence)
        except Exception:
            log.exception("stream record %s cannot be projected", sequence)
            failed.append(sequence)
    try:
        get_runtime().project(changes)
    except Exception:
        log.exception("projecting a batch of %d records failed", len(changes))
        failed.extend(read)
    if oldest is not None:
        count("ProjectionLag", max(0.0, time.time() - oldest) * 1000, "Milliseconds")
    count("ProjectionFailures", len(failed))
    return {"batchItemFailures": [{"itemIdentifier": seq} for seq in failed]}


def _redrive(lambda_context):
    from agent_memory.services.operations.redrive import redrive_when_search_answers

    rt = get_runtime()
    if rt.search is None:
        return {"letters": 0, "replayed": 0, "expired": 0, "searchUnavailable": False}
    left = getattr(lambda_context, "get_remaining_time_in_millis", None)
    stats = redrive_when_search_answers(
        rt.projection_dead_letters, rt.base_store, rt.search,
        should_stop=(lambda: left() < REDRIVE_MARGIN_MS) if callable(left) else (lambda: False))
    count("ProjectionRedriven", stats.replayed_records)
    count("ProjectionReindexDue", stats.expired)
    if stats.expired:
        log.error("%d dead-lettered projection batches are older than the stream: run `agent-memory redrive`"
                  " (it reindexes)", stats.expired)
    if stats.letters or stats.search_unavailable:
        log.warning("redrive: %d dead letters, %d records replayed, search %s", stats.letters,
                    stats.replayed_records, "still unavailable" if stats.search_unavailable else "answering")
    return {"letters": stats.letters, "replayed": stats.replayed_records, "expired": stats.expired,
            "searchUnavailable": stats.search_unavailable}
