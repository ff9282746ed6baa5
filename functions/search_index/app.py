"""Search index setup: the CloudFormation custom resource (``SearchIndexSetup`` in
template.yaml) that makes the tenant's OpenSearch index and its alias before the first
request, on every deploy that changes the embedder, the engine or the code
(``Runtime.provision_search_index``, ``adapters/opensearch/admin.provision_with_retry``). Only this function's role may create indexes or
move aliases; the API functions and the projector read and write documents through the alias.

Create and Update provision (a changed configuration gets a new index beside the serving one;
``NeedsRebuild`` says so and ``agent-memory reindex --rebuild`` fills it and switches); Delete
leaves the index alone (on a shared domain or collection it stays; the stack's own collection
goes with the stack, docs/opensearch.md). A new collection refuses requests (403, or 404) until
its data access policy is in force, so Create and Update retry with backoff for as long as the
invocation leaves, less ``RESPONSE_MARGIN_S`` to answer. Every event is answered on its
``ResponseURL``, failures included (with the reason), so a deploy never waits out
CloudFormation's hour.
"""

import json
import logging
import time
import urllib.request

from agent_memory.observability import instrumented
from agent_memory.runtime import get_runtime

log = logging.getLogger("agent_memory.search_index")

RESPONSE_MARGIN_S = 45  # left of the invocation to answer CloudFormation (its PUT may take 30 s)
_sleep, _clock = time.sleep, time.monotonic  # replaced by tests (no timed tests)


def retry_budget_s(lambda_context) -> float:
    """Seconds the index step may spend retrying: the invocation's remaining time less the
    margin to answer (no context, as in a direct call: one attempt)."""
    if lambda_context is None:
        return 0.0
    return max(0.0, lambda_context.get_remaining_time_in_millis() / 1000 - RESPONSE_MARGIN_S)


def respond(event, status, physical_id, data=None, reason=""):
    body = json.dumps({
        "Status": status, "Reason": reason[:3000] or status, "PhysicalResourceId": physical_id,
        "StackId": event["StackId"], "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
        "Data": data or {},
    }).encode()
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(body))})
    with urllib.request.urlopen(request, timeout=30) as resp:  # noqa: S310 - CloudFormation's presigned URL
        resp.read()


@instrumented(http=False)
def lambda_handler(event, lambda_context):
    kind = event.get("RequestType")
    physical = event.get("PhysicalResourceId") or "search-index-not-created"
    try:
        if kind == "Delete":
            respond(event, "SUCCESS", physical, reason="the index is left as it is (rebuilt from the table if lost)")
            return {"status": "kept", "index": physical}
        result = get_runtime().provision_search_index(budget_s=retry_budget_s(lambda_context), sleep=_sleep,
                                                      clock=_clock)
        if result.needs_rebuild:
            log.warning("index %s made beside %s: run `agent-memory reindex --rebuild` to fill it and switch "
                        "the alias %s", result.index, result.serving or "a legacy index", result.alias)
        respond(event, "SUCCESS", result.index, result.as_data())
        return result.as_data()
    except Exception as exc:
        log.exception("search index setup (%s) failed", kind)
        respond(event, "FAILED", physical, reason=f"{type(exc).__name__}: {exc}")
        return {"status": "failed"}
