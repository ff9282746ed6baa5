"""Runs one function from a built artifact the way Lambda does, for the artifact check and
the cold-start bench. Start it as ``python -I -S lambda_harness.py TASK_ROOT LAYER_ROOT [TIMEOUT_S [STEP_MS]]``:
``-I -S`` leave only the standard library on ``sys.path``; this script then adds the
function's artifact (Lambda's ``/var/task``) and the layer (``/opt/python``), nothing else.
``STEP_MS`` (optional) makes time pass by reads instead of by the clock: each invocation's
context starts at ``TIMEOUT_S`` and what it reports falls by ``STEP_MS`` with each read (the
ingestion worker reads it once before each model call it starts), so a test can have the
unchanged artifact run out of time after a known number of calls.

Protocol, one JSON document per line: stdout first says ``{"ready": ..., "import_ms": ...}``
(or ``{"import_error": ...}``); then each stdin line is an event, answered by the handler's
return value with the invocation's wall and CPU time (``{"result": ..., "ms": ..., "cpu_ms":
...}``); the line ``"done"`` is answered with the AWS calls the function made
(``[service, operation, target]``, recorded below the SDK; ``target`` is what IAM evaluates the
call on: table, index and partition keys, secret, queue, bucket and key, model id; see
``target()``) and ends the process.
"""

import json
import sys
import time
import traceback

task_root, layer_root = sys.argv[1], sys.argv[2]
# The function's configured timeout (template.yaml), as Lambda's context reports it.
timeout_ms = int(float(sys.argv[3]) * 1000) if len(sys.argv) > 3 else 29_000
step_ms = int(sys.argv[4]) if len(sys.argv) > 4 else None
sys.path[:0] = [task_root, layer_root]
calls = []


def _pk(key):
    return ((key or {}).get("pk") or {}).get("S")


_streams_read = []


def target(operation, params):
    """The parts of a request IAM evaluates: resource names and condition-key values."""
    t = {}
    for name in ("TableName", "IndexName", "SecretId", "QueueUrl", "Bucket", "Key", "modelId", "StreamArn"):
        if isinstance(params.get(name), str):
            t[name] = params[name]
    if operation == "Rerank":  # bedrock-agent-runtime: the model is inside the configuration
        config = (params.get("rerankingConfiguration") or {}).get("bedrockRerankingConfiguration") or {}
        t["modelArn"] = (config.get("modelConfiguration") or {}).get("modelArn")
    if operation in ("DescribeStream", "GetShardIterator") and "StreamArn" in t:
        _streams_read.append(t["StreamArn"])
    elif operation == "GetRecords" and _streams_read:
        t["StreamArn"] = _streams_read[-1]  # an iterator is of the stream it was asked of
    if operation in ("GetItem", "DeleteItem", "UpdateItem"):
        t["LeadingKeys"] = [_pk(params.get("Key"))]
    elif operation == "PutItem":
        t["LeadingKeys"] = [_pk(params.get("Item"))]
    elif operation == "Query":
        values = params.get("ExpressionAttributeValues") or {}
        t["LeadingKeys"] = [values.get(":p", {}).get("S")]
    elif operation == "BatchGetItem":
        t["Items"] = [{"TableName": table, "LeadingKeys": [_pk(k) for k in spec.get("Keys", [])]}
                      for table, spec in (params.get("RequestItems") or {}).items()]
    elif operation in ("TransactWriteItems", "TransactGetItems"):
        items = []
        for item in params.get("TransactItems") or []:
            (kind, body), = item.items()
            items.append({"Operation": {"Put": "PutItem", "Delete": "DeleteItem", "Update": "UpdateItem",
                                        "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}[kind],
                          "TableName": body.get("TableName"),
                          "LeadingKeys": [_pk(body.get("Item") if kind == "Put" else body.get("Key"))]})
        t["Items"] = items
    return t


class Context:
    function_name = "artifact-check"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:artifact-check"
    memory_limit_in_mb = 512
    aws_request_id = "req-artifact-check"
    log_group_name = "/aws/lambda/artifact-check"
    log_stream_name = "artifact-check"

    def __init__(self):
        self.deadline = time.monotonic() + timeout_ms / 1000
        self.reads = 0

    def get_remaining_time_in_millis(self):
        if step_ms is not None:  # time passes by reads (STEP_MS), not by the clock
            self.reads += 1
            return max(0, timeout_ms - step_ms * (self.reads - 1))
        return max(0, int((self.deadline - time.monotonic()) * 1000))


def reply(doc):
    sys.__stdout__.write(json.dumps(doc, default=str) + "\n")
    sys.__stdout__.flush()


# The handler's own prints (EMF metrics, JSON logs) go to stderr so stdout stays the protocol.
sys.stdout = sys.stderr
started = time.perf_counter()
started_cpu = time.process_time()
try:
    import app  # the function's artifact: /var/task/app.py

    import_ms = (time.perf_counter() - started) * 1000
    # CPU time is what a loaded machine inflates least; Lambda's init is CPU-bound too.
    import_cpu_ms = (time.process_time() - started_cpu) * 1000
    import botocore.client

    make_api_call = botocore.client.BaseClient._make_api_call

    def recording(self, operation_name, params):
        calls.append([self.meta.service_model.signing_name, operation_name, target(operation_name, params)])
        return make_api_call(self, operation_name, params)

    botocore.client.BaseClient._make_api_call = recording
except BaseException as exc:  # noqa: BLE001 - reported to the parent
    reply({"import_error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
    sys.exit(3)

reply({"ready": True, "import_ms": round(import_ms, 1), "import_cpu_ms": round(import_cpu_ms, 1),
       "sys_path": sys.path, "site_packages": [p for p in sys.path if "site-packages" in p]})
for line in sys.stdin:
    message = json.loads(line)
    if message == "done":
        reply({"calls": calls})
        break
    started, started_cpu = time.perf_counter(), time.process_time()
    try:
        answer = {"result": app.lambda_handler(message, Context())}
    except BaseException as exc:  # noqa: BLE001
        answer = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    # How long the invocation took (the cold-start bench's first request), CPU as for the import.
    answer.update(ms=round((time.perf_counter() - started) * 1000, 1),
                  cpu_ms=round((time.process_time() - started_cpu) * 1000, 1))
    reply(answer)
