"""Search index setup: the CloudFormation custom resource (``SearchIndexSetup`` in
template.yaml) that makes the tenant's OpenSearch index and its alias before the first
request, on every deploy that changes the embedder, the engine or the code
(``Runtime.provision_search_index``, ``adapters/opensearch_admin.provision``). Only this function's role may create indexes or
move aliases; the API functions and the projector read and write documents through the alias.

Create and Update provision (a changed configuration gets a new index beside the serving one;
``NeedsRebuild`` says so and ``agent-memory reindex --rebuild`` fills it and switches); Delete
keeps the index, as the stack keeps the table it is built from. Every event is answered on
its ``ResponseURL``, failures included, so a deploy never waits out CloudFormation's hour.
"""

import json
import logging
import urllib.request

from agent_memory.observability import instrumented
from agent_memory.runtime import get_runtime

log = logging.getLogger("agent_memory.search_index")


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
            respond(event, "SUCCESS", physical, reason="the index is kept with the table")
            return {"status": "kept", "index": physical}
        result = get_runtime().provision_search_index()
        if result.needs_rebuild:
            log.warning("index %s made beside %s: run `agent-memory reindex --rebuild` to fill it and switch "
                        "the alias %s", result.index, result.serving or "a legacy index", result.alias)
        respond(event, "SUCCESS", result.index, result.as_data())
        return result.as_data()
    except Exception as exc:
        log.exception("search index setup (%s) failed", kind)
        respond(event, "FAILED", physical, reason=f"{type(exc).__name__}: {exc}")
        return {"status": "failed"}
