"""The check that the stack `sam build` produces can serve: every function is imported from
its built artifact in a fresh interpreter that sees only what Lambda gives it (the
function's folder, the layer, the standard library), serves every route it owns as real
API Gateway v2 events against moto's standalone server, the ingestion worker consumes the
document jobs the documents function queued on SQS, and the projector turns the table's
stream records into OpenSearch ``_bulk`` bodies. It also records each function's
AWS calls and compares them with its policies in template.yaml (least privilege).

``make test`` starts ``sam build`` in the background before the unit tests
(``AGENT_MEMORY_SAM_BUILD=background``); run alone, this module builds first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import route_scenario

from agent_memory.cfn_template import load_template
from agent_memory.http.local_server import LocalGateway, build_event

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / ".aws-sam" / "build"
BUILD_RC = REPO / ".aws-sam" / "build.rc"
BUILD_LOG = REPO / ".aws-sam" / "build.log"
HARNESS = Path(__file__).with_name("lambda_harness.py")
TEMPLATE = load_template(REPO / "template.yaml")
RESOURCES = TEMPLATE["Resources"]
FUNCTIONS = sorted(n for n, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function")
WORKERS = ("ProjectorFunction", "IngestionFunction")  # event consumers, no routes
API_FUNCTIONS = [f for f in FUNCTIONS if f not in WORKERS]
TABLE = "agent-memory-acme"
UPLOAD_BUCKET = "agent-memory-acme-uploads"
pytestmark = pytest.mark.timeout(1500)


# --- the build ------------------------------------------------------------------------


def _build() -> Path:
    if os.environ.get("AGENT_MEMORY_SAM_BUILD") == "background":
        deadline = time.monotonic() + 1200
        while not BUILD_RC.exists():
            if time.monotonic() > deadline:
                pytest.fail("sam build did not finish within 20 minutes")
            time.sleep(2)
        rc = BUILD_RC.read_text().strip()
    else:
        result = subprocess.run(["make", "-s", "sam-build"], cwd=REPO, capture_output=True, text=True)
        BUILD_LOG.parent.mkdir(exist_ok=True)
        BUILD_LOG.write_text(result.stdout + result.stderr)
        rc = str(result.returncode)
    if rc != "0":
        pytest.fail(f"sam build failed (rc {rc}):\n{BUILD_LOG.read_text()[-4000:]}")
    return BUILD


@pytest.fixture(scope="module")
def build() -> Path:
    return _build()


def layer_root(build: Path) -> Path:
    return build / "DependenciesLayer" / "python"


# --- loopback services ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    port = _free_port()
    server = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    proc = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("moto_server did not start")
            time.sleep(0.2)
    try:
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a loaded machine can be slow to stop werkzeug
            proc.kill()
            proc.wait(timeout=10)


class SearchStub:
    """Loopback stand-in for OpenSearch: records ``_bulk`` bodies and answers the calls the
    adapter makes (index existence and creation, searches with no hits)."""

    def __init__(self) -> None:
        self.bulk_bodies: list[str] = []
        self.requests: list[tuple[str, str]] = []
        self.down = False  # answer every request 503, as an overloaded or failing cluster does
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any = None) -> None:
                data = json.dumps(body if body is not None else {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                path = self.path.split("?")[0]
                stub.requests.append((self.command, path))
                if stub.down:
                    return self._reply(503, {"error": "service_unavailable"})
                if path.endswith("/_bulk"):
                    stub.bulk_bodies.append(body)
                    actions = [json.loads(line) for line in body.splitlines() if line.strip()]
                    items = [{next(iter(a)): {"status": 200}} for a in actions
                             if next(iter(a)) in ("index", "create", "update", "delete")]
                    return self._reply(200, {"took": 1, "errors": False, "items": items})
                if path.endswith("/_msearch"):
                    n = sum(1 for line in body.splitlines() if line.strip()) // 2
                    return self._reply(200, {"responses": [{"hits": {"hits": []}}] * n})
                if path.endswith(("/_search", "/_delete_by_query", "/_count")):
                    return self._reply(200, {"hits": {"hits": [], "total": {"value": 0}}, "deleted": 0, "count": 0})
                if self.command == "HEAD":
                    return self._reply(404)
                if self.command == "PUT":
                    return self._reply(200, {"acknowledged": True})
                if path == "/":
                    return self._reply(200, {"version": {"number": "2.19.0"}})
                return self._reply(404, {"found": False})

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# --- the function environment, from template.yaml --------------------------------------


def resolve(value: Any, refs: dict[str, str], conditions: dict[str, bool]) -> str:
    """A template value with Refs and Fn::If evaluated against the test's stack."""
    if isinstance(value, dict):
        if "Ref" in value:
            return refs[value["Ref"]]
        if "Fn::If" in value:
            cond, yes, no = value["Fn::If"]
            return resolve(yes if conditions[cond] else no, refs, conditions)
        if "Fn::Sub" in value and isinstance(value["Fn::Sub"], str):
            return re.sub(r"\$\{([A-Za-z0-9:]+)\}", lambda m: refs[m.group(1)], value["Fn::Sub"])
        raise AssertionError(f"unsupported intrinsic in the function environment: {value}")
    return str(value)


def function_env(name: str, moto: str, stub: SearchStub, secrets: dict[str, str]) -> dict[str, str]:
    refs = {"IngestionQueue": secrets.get("ingestion_queue", ""), "UploadBucket": UPLOAD_BUCKET, "MemoryTable": TABLE, "TenantId": "acme", "OpenSearchEndpoint": stub.url, "OpenSearchService": "es", "OpenSearchEngine": "faiss",
            "ExtractionModel": "bedrock/anthropic.claude-3-haiku-20240307-v1:0",
            "ResponseModel": "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
            "EmbeddingModel": "bedrock/amazon.titan-embed-text-v2:0", "AllowedModels": "", "OpenAISecretArn": "",
            "CursorSecret": secrets["cursor"], "BootstrapKeySecret": secrets["bootstrap"],
            "ProjectorDeadLetterQueue": secrets.get("projector_dlq", "")}
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    own = ((RESOURCES[name]["Properties"].get("Environment") or {}).get("Variables")) or {}
    env = {k: resolve(v, refs, {"HasSearch": True, "HasOpenAISecret": False})
           for k, v in {**variables, **own}.items()}
    env.update({
        # Models: the offline provider, through the same environment variables a stack sets.
        "AGENT_MEMORY_MODELS_EXTRACTION": "offline/deterministic", "AGENT_MEMORY_MODELS_RESPONSE": "offline/deterministic",
        "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1", "AGENT_MEMORY_OPENSEARCH_ENGINE": "lucene",
        "AWS_LAMBDA_FUNCTION_NAME": name, "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
        "AWS_ENDPOINT_URL": moto, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC",
    })
    return env


def function_timeout(name: str) -> int:
    """Seconds the function may run (template.yaml): its context reports what is left of them.
    (The ingestion worker stops a minute before its 900 s end; a fixed 29 s context made the
    built worker give every job back as out of time.)"""
    own = RESOURCES[name]["Properties"].get("Timeout")
    return int(own if own is not None else TEMPLATE["Globals"]["Function"]["Timeout"])


class FunctionProcess:
    """One function's artifact in its own interpreter (lambda_harness.py)."""

    def __init__(self, name: str, build: Path, env: dict[str, str], layer: Path | None = None):
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(HARNESS), str(build / name), str(layer or layer_root(build)),
             str(function_timeout(name))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            cwd=str(build / name))
        self.stderr: list[str] = []
        self._drain = threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True)
        self._drain.start()
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=10)
            raise AssertionError(f"{self.name} exited: {''.join(self.stderr)[-3000:]}")
        return json.loads(line)

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(event) + "\n")
        self.proc.stdin.flush()
        answer = self._read()
        assert "result" in answer, f"{self.name} raised: {answer.get('traceback')}"
        return answer["result"]

    def finish(self) -> list[tuple[str, str]]:
        self.proc.stdin.write('"done"\n')
        self.proc.stdin.flush()
        calls = [tuple(c) for c in self._read()["calls"]]
        self.proc.wait(timeout=30)
        self._drain.join(timeout=5)
        return calls


def handler_function(handler_path: str) -> str:
    folder = handler_path.split("/")[1]
    return next(n for n in FUNCTIONS if RESOURCES[n]["Properties"]["CodeUri"] == f"functions/{folder}/")


@pytest.fixture(scope="module")
def deployed(build: Path, moto_endpoint: str) -> Iterator[dict[str, Any]]:
    """Drives the scenario through the artifacts; yields what each part observed."""
    import boto3

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    aws = {"endpoint_url": moto_endpoint, "region_name": "us-east-1", "aws_access_key_id": "testing",
           "aws_secret_access_key": "testing"}
    dynamodb = boto3.client("dynamodb", **aws)
    create_table_from_template(dynamodb, TABLE, REPO / "template.yaml")
    secretsmanager = boto3.client("secretsmanager", **aws)
    bootstrap_key = "bootstrap-" + os.urandom(16).hex()
    secrets = {"cursor": secretsmanager.create_secret(Name="cursor", SecretString=os.urandom(32).hex())["ARN"],
               "bootstrap": secretsmanager.create_secret(Name="bootstrap", SecretString=bootstrap_key)["ARN"]}
    sqs = boto3.client("sqs", **aws)
    secrets["ingestion_queue"] = sqs.create_queue(QueueName="ingestion")["QueueUrl"]
    secrets["projector_dlq"] = sqs.create_queue(QueueName="projector-dlq")["QueueUrl"]
    boto3.client("s3", **aws).create_bucket(Bucket=UPLOAD_BUCKET)
    # The operator's step: a key for the agent, written to the table with the CLI.
    created = subprocess.run(
        [str(Path(sys.executable).parent / "agent-memory"), "keys", "create", "--table", TABLE,
         "--principal", "ops", "--group", "support", "--admin"],
        capture_output=True, text=True, timeout=120,
        env={**aws_env(moto_endpoint), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert created.returncode == 0, created.stderr
    agent_key = created.stdout.split("store it now): ")[1].strip()
    stub = SearchStub()
    gateway = LocalGateway(REPO)
    processes: dict[str, FunctionProcess] = {}
    statuses: dict[str, list[tuple[str, int]]] = {}
    anonymous: dict[str, int] = {}

    def process(name: str) -> FunctionProcess:
        if name not in processes:
            processes[name] = FunctionProcess(name, build, function_env(name, moto_endpoint, stub, secrets))
        return processes[name]

    def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        target_path, _, query = path.partition("?")
        route, params = gateway.match(method, target_path)
        name = handler_function(route.handler)
        data = json.dumps(body).encode() if body is not None else b""
        # The bootstrap key for the first call (as the README's first curl), the stored key after.
        key = bootstrap_key if path == "/api/v1/health" else agent_key
        hdrs = {"content-type": "application/json", "authorization": f"Bearer {key}", **(headers or {})}
        if name not in anonymous:  # every function refuses a caller without a key, first
            no_key = {k: v for k, v in hdrs.items() if k != "authorization"}
            event = build_event(route, method, target_path, query, no_key, data, params, "203.0.113.9")
            anonymous[name] = process(name).invoke(event)["statusCode"]
        result = process(name).invoke(build_event(route, method, target_path, query, hdrs, data, params,
                                                  "203.0.113.9"))
        statuses.setdefault(name, []).append((route.route_key, result["statusCode"]))
        text = result.get("body") or ""
        return result["statusCode"], json.loads(text) if text and text.lstrip()[:1] in "{[" else text

    try:
        route_scenario.run(call)
        # The jobs the documents function queued, delivered as Lambda's SQS event source does.
        messages = sqs.receive_message(QueueUrl=secrets["ingestion_queue"], MaxNumberOfMessages=10)["Messages"]
        ingestion = FunctionProcess("IngestionFunction", build,
                                    function_env("IngestionFunction", moto_endpoint, stub, secrets))
        jobs = ingestion.invoke({"Records": [{"messageId": m["MessageId"], "body": m["Body"],
                                              "eventSource": "aws:sqs"} for m in messages]})
        ingested = {}
        for m in messages:  # every document the scenario kept (the one deleted while queued: 404)
            doc_id = json.loads(m["Body"])["document_id"]
            status, ingested[doc_id] = call("GET", f"{route_scenario.CTX}/documents/{doc_id}")
            if status == 404:
                del ingested[doc_id]
        records = stream_records(boto3.client("dynamodbstreams", **aws), dynamodb)
        projector = FunctionProcess("ProjectorFunction", build,
                                    function_env("ProjectorFunction", moto_endpoint, stub, secrets))
        batch = projector.invoke({"Records": records})
        outage = projector_outage(projector, stub, sqs, secrets["projector_dlq"], records)
        calls = {name: p.finish() for name, p in processes.items()}
        calls["ProjectorFunction"] = projector.finish()
        calls["IngestionFunction"] = ingestion.finish()
        workers = {"ProjectorFunction": projector, "IngestionFunction": ingestion}
        output = {name: "".join(p.stderr) for name, p in {**processes, **workers}.items()}
        yield {"statuses": statuses, "anonymous": anonymous, "calls": calls, "records": records, "batch": batch,
               "jobs": jobs, "messages": messages, "ingested": ingested,
               "bulk": list(stub.bulk_bodies), "ready": {n: p.ready for n, p in processes.items()},
               "output": output, "keys": [bootstrap_key, agent_key], "outage": outage}
    finally:
        for p in processes.values():
            if p.proc.poll() is None:
                p.proc.kill()
        stub.close()


def projector_outage(projector: FunctionProcess, stub: SearchStub, sqs: Any, dlq: str,
                     records: list[dict[str, Any]]) -> dict[str, Any]:
    """Search fails: the built projector reports the batch (Lambda retries it, then sends its
    stream range to the dead-letter queue, as below); the scheduled redrive leaves the letter
    while search fails and re-projects it once search answers."""
    stub.down = True
    retried = projector.invoke({"Records": records})
    arn = records[0]["eventSourceARN"]
    shards = [s["ShardId"] for s in _streams(sqs).describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]]
    assert len(shards) == 1, "moto's stream has one shard: the letter names every record on it"
    for shard in shards:  # what Lambda's on-failure destination sends for the failed batch
        seqs = [r["dynamodb"]["SequenceNumber"] for r in records]
        body = {"requestContext": {"condition": "RetryAttemptsExhausted"},
                "DDBStreamBatchInfo": {"shardId": shard, "startSequenceNumber": min(seqs, key=int),
                                       "endSequenceNumber": max(seqs, key=int), "batchSize": len(seqs),
                                       "streamArn": arn}}
        sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(body))
    while_down = projector.invoke({"redrive": "dead-letters"})
    depth_down = _depth(sqs, dlq)
    stub.down = False
    bulk_before = len(stub.bulk_bodies)
    redriven = projector.invoke({"redrive": "dead-letters"})
    return {"retried": retried, "while_down": while_down, "depth_down": depth_down, "redriven": redriven,
            "depth_after": _depth(sqs, dlq), "bulk": stub.bulk_bodies[bulk_before:], "shards": len(shards)}


def _streams(sqs: Any) -> Any:
    import boto3

    return boto3.client("dynamodbstreams", endpoint_url=sqs.meta.endpoint_url, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def _depth(sqs: Any, queue: str) -> int:
    attrs = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return sum(int(v) for v in attrs.values())


def aws_env(endpoint: str) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def stream_records(streams: Any, dynamodb: Any) -> list[dict[str, Any]]:
    """The table's stream, shaped as Lambda delivers it to the projector."""
    arn = dynamodb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    records: list[dict[str, Any]] = []
    for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while iterator:
            page = streams.get_records(ShardIterator=iterator, Limit=1000)
            records += page["Records"]
            iterator = page.get("NextShardIterator") if page["Records"] else None

    def lambda_shape(record: dict[str, Any]) -> dict[str, Any]:
        images = dict(record["dynamodb"])
        created = images.get("ApproximateCreationDateTime")
        if isinstance(created, datetime):
            images["ApproximateCreationDateTime"] = created.timestamp()
        return {**record, "dynamodb": images, "eventSourceARN": arn}

    return [lambda_shape(r) for r in records]


# --- the checks -----------------------------------------------------------------------


def test_artifacts_hold_only_what_ships(build: Path):
    forbidden = {"tests", "bench", ".agent-memory", "agent-memory.yaml", "Makefile", "template.yaml",
                 "samconfig.toml", ".git", ".aws-sam", "functions", "shared"}
    for name in FUNCTIONS:
        entries = {p.name for p in (build / name).iterdir()}
        assert entries <= {"app.py", "requirements.txt", "__pycache__"}, (name, entries)
        assert "app.py" in entries
    layer = {p.name for p in layer_root(build).iterdir()}
    assert "agent_memory" in layer and not layer & forbidden
    assert not [p for p in layer if p.startswith(".venv")]
    assert not [p for p in layer if p.startswith(("grpc", "opensearch_protobufs", "google"))], \
        "gRPC/protobuf should not ship: nothing imports them"


def test_each_function_imports_from_its_artifact_with_lambdas_paths_only(deployed, build: Path):
    for name, ready in deployed["ready"].items():
        assert ready["site_packages"] == [], name
        assert ready["sys_path"][:2] == [str(build / name), str(layer_root(build))]


def test_every_route_is_served_by_its_built_function(deployed):
    served = {route for routes in deployed["statuses"].values() for route, _ in routes}
    wired = {r.route_key for r in LocalGateway(REPO).routes}
    assert wired - served == set()
    for name, routes in deployed["statuses"].items():
        assert not [r for r in routes if r[1] >= 500], (name, routes)
    assert set(deployed["statuses"]) == set(API_FUNCTIONS)


def test_a_deployed_function_refuses_anonymous_callers(deployed):
    assert deployed["anonymous"] == {name: 401 for name in API_FUNCTIONS}


def test_the_built_projector_writes_the_stream_to_the_search_index(deployed):
    assert deployed["records"], "the writes produced no stream records"
    assert deployed["batch"] == {"batchItemFailures": []}
    actions = [json.loads(line) for body in deployed["bulk"] for line in body.splitlines() if line.strip()]
    assert actions, "the projector sent nothing to _bulk"
    sources = [a for a in actions if next(iter(a)) not in ("index", "create", "update", "delete")]
    indexed = [next(iter(a.values())) for a in actions if next(iter(a)) in ("index", "create")]
    # index-scoped requests (POST /<index>/_bulk): no action line names an index
    assert indexed and not [i for i in indexed if "_index" in i]
    assert any("Globex" in json.dumps(s) for s in sources), "the resolved employer fact was not projected"
    assert any("printer" in json.dumps(s).lower() for s in sources), "the thread turn was not projected"


def test_the_built_projector_retries_dead_letters_and_redrives_once_search_answers(deployed):
    outage = deployed["outage"]
    assert len(outage["retried"]["batchItemFailures"]) == len(deployed["records"])  # Lambda retries them
    assert outage["while_down"]["searchUnavailable"] is True and outage["while_down"]["replayed"] == 0
    assert outage["depth_down"] == outage["shards"]  # every letter kept while search fails
    redriven = outage["redriven"]
    assert redriven["searchUnavailable"] is False and redriven["expired"] == 0, redriven
    assert redriven["letters"] == outage["shards"] and redriven["replayed"] >= 1
    assert outage["depth_after"] == 0
    sources = [line for body in outage["bulk"] for line in body.splitlines() if line.strip()]
    assert any("Globex" in line for line in sources), "the redrive did not re-project the table's items"


def test_the_built_ingestion_worker_ingests_the_queued_documents(deployed):
    # one job per document the scenario uploaded: two synchronous (one deleted while queued)
    # and one through a presigned PUT to S3, which the worker reads
    assert len(deployed["messages"]) == 3
    assert deployed["jobs"] == {"batchItemFailures": []}, deployed["output"]["IngestionFunction"][-4000:]
    kept = deployed["ingested"]
    assert sorted(d["title"] for d in kept.values()) == ["Parking", "Visitors"]
    for doc in kept.values():
        assert doc["status"] == "ready", doc
        assert doc["chunksDone"] == doc["chunksTotal"] >= 1


def test_the_built_functions_log_json_lines_and_emf_without_keys_or_text(deployed):
    for name, text in deployed["output"].items():
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        emf = [line for line in lines if "_aws" in line]
        logs = [line for line in lines if "_aws" not in line]
        assert emf and all(d["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "AgentMemory" for d in emf), name
        for key in deployed["keys"]:
            assert key not in text, f"{name} wrote an API key to its output"
        for message in ("printer on floor 2", "I think I work at Globex", "Book trains"):
            assert message not in text, f"{name} logged message text"
        if name not in WORKERS:
            requests = [line for line in logs if line.get("message") == "request"]
            assert requests and all(r["correlation_id"] and r["level"] == "INFO" for r in requests), name
            assert {r.get("principal") for r in requests} <= {"ops", "bootstrap-admin", None}
            assert all("Requests" in d and d["route"] and d["status"] for d in emf), name
    projector = [json.loads(line) for line in deployed["output"]["ProjectorFunction"].splitlines()
                 if line.startswith("{") and "_aws" in line]
    assert "ProjectionLag" in projector[0] and projector[0]["ProjectionFailures"] in (0, [0])


# --- least privilege ------------------------------------------------------------------

# What a TransactWriteItems of Put, Delete and ConditionCheck items needs besides itself.
TRANSACT_ITEM_ACTIONS = {"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"}
MANAGED = {n: r["Properties"]["PolicyDocument"]["Statement"] for n, r in RESOURCES.items()
           if r["Type"] == "AWS::IAM::ManagedPolicy"}
# Tracing: Active makes SAM attach the AWS managed AWSXrayWriteOnlyAccess to each role it
# generates (samtranslator: get_xray_managed_policy_name); a function with its own Role
# lists what it needs itself.
XRAY_WRITE_ONLY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules",
                   "xray:GetSamplingTargets", "xray:GetSamplingStatisticSummaries"}


def granted_actions(name: str) -> set[str]:
    props = RESOURCES[name]["Properties"]
    refs: list[str] = []
    if "Role" in props:
        role = RESOURCES[props["Role"]["Fn::GetAtt"][0]]["Properties"]
        statements = [s for p in role.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
        refs = [r["Ref"] if "Ref" in r else r["Fn::If"][1]["Ref"] for r in role.get("ManagedPolicyArns", [])
                if isinstance(r, dict) and ("Ref" in r or "Fn::If" in r)]
    else:
        statements = []
        tracing = props.get("Tracing", TEMPLATE["Globals"]["Function"].get("Tracing"))
        if tracing in ("Active", "PassThrough"):
            statements.append({"Effect": "Allow", "Action": sorted(XRAY_WRITE_ONLY), "Resource": "*"})
        for policy in props.get("Policies", []):
            if "Ref" in policy:
                refs.append(policy["Ref"])
            elif "Fn::If" in policy:
                refs.append(policy["Fn::If"][1]["Ref"])
            else:
                raise AssertionError(f"{name}: only managed policies, so this check can read them")
    for ref in refs:
        statements += MANAGED[ref]
    actions: set[str] = set()
    while any("Fn::If" in st for st in statements):  # a conditional statement: both branches
        statements = [b for st in statements for b in (st["Fn::If"][1:] if "Fn::If" in st else [st])
                      if isinstance(b, dict) and "Ref" not in b]
    for statement in statements:
        if statement.get("Effect") == "Deny":
            continue
        listed = statement["Action"]
        actions |= set([listed] if isinstance(listed, str) else listed)
    return actions


def recorded_actions(calls: list[tuple[str, str]]) -> set[str]:
    return {f"{service}:{operation}" for service, operation in calls}


# Granted but not exercised by the offline scenario, each for a reason.
NOT_EXERCISED = {
    "bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream",  # the scenario's models are offline
    "dynamodb:BatchGetItem",  # batch reads of entities and facts, on paths the scenario may not take
    "secretsmanager:GetSecretValue",  # the OpenAI key policy (absent here) and the cursor secret
    "es:ESHttpGet", "es:ESHttpHead", "es:ESHttpPost", "es:ESHttpPut", "es:ESHttpDelete", "aoss:APIAccessAll",
    # the Lambda service reads the stream and sends to the dead-letter queue with the projector's role
    "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams",
    "sqs:SendMessage",
    # the documents function signs presigned PUTs (no call of its own); the caller's PUT uses it
    "s3:PutObject",
    # X-Ray (Tracing: Active): Lambda's X-Ray daemon sends the function's segments with the role,
    # over UDP from the SDK, never through botocore; sampling is Lambda's (the SDK polls no rules
    # in Lambda), so the three reads come only with SAM's AWSXrayWriteOnlyAccess (unused)
    *XRAY_WRITE_ONLY,
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_each_function_is_granted_what_its_code_calls_and_no_more(deployed, name):
    called = recorded_actions(deployed["calls"].get(name, []))
    granted = granted_actions(name)
    needed = set(called)
    if "dynamodb:TransactWriteItems" in called:
        needed |= TRANSACT_ITEM_ACTIONS
    assert needed - granted == set(), f"{name} calls what it may not"
    unexplained = granted - needed - NOT_EXERCISED
    assert unexplained == set(), f"{name} is granted actions its code does not call"


def test_a_layer_missing_a_dependency_fails_the_import(build: Path, tmp_path: Path, moto_endpoint: str):
    partial = tmp_path / "python"
    partial.mkdir()
    for entry in layer_root(build).iterdir():
        if not entry.name.startswith("aws_lambda_powertools"):
            (partial / entry.name).symlink_to(entry)
    env = {"PATH": "/usr/bin:/bin", "AWS_LAMBDA_FUNCTION_NAME": "SessionsFunction"}
    proc = subprocess.run([sys.executable, "-I", "-S", str(HARNESS), str(build / "SessionsFunction"), str(partial)],
                          input='"done"\n', capture_output=True, text=True, env=env, timeout=120)
    first = json.loads(proc.stdout.splitlines()[0])
    assert "aws_lambda_powertools" in first.get("import_error", ""), first
