"""The check that the stack `sam build` produces can serve: every function is imported from
its built artifact in a fresh interpreter that sees only what Lambda gives it (the
function's folder, the layer, the standard library), serves every route it owns as real
API Gateway v2 events against moto's standalone server, the ingestion worker consumes the
document jobs the documents function queued on SQS, and the projector turns the table's
stream records into OpenSearch ``_bulk`` bodies. Before any of it the deploy step
(``SearchIndexFunction``) makes the index and its alias on the loopback search stub, as
``sam deploy`` runs it. The README's worked example and the other modes (keys with regions,
delegated reads, an admin past a reader list, a second partition) run too. Every AWS call
and every OpenSearch request each function makes is recorded with what it touches and
evaluated against that function's policies in template.yaml, resources and conditions
included (``iam_policy``): a call outside them fails, and so does a granted statement
that no call needs.

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
from pathlib import Path
from typing import Any

import iam_policy
import iam_table
import pytest
import route_scenario
from cfn_response import CloudFormationSide
from search_stub import SearchCluster

from agent_memory.cfn_template import load_template
from agent_memory.http.local_server import LocalGateway, build_event

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / ".aws-sam" / "build"
BUILD_RC = REPO / ".aws-sam" / "build.rc"
BUILD_LOG = REPO / ".aws-sam" / "build.log"
HARNESS = Path(__file__).with_name("lambda_harness.py")
TEMPLATE = load_template(REPO / "template.yaml")
RESOURCES = TEMPLATE["Resources"]
# The streaming chat function (iam_table.SHARED_ROLES) runs the chat function's code with its role:
# its calls are the chat function's, recorded here; tests/deploy/test_built_streaming.py drives it.
FUNCTIONS = sorted(n for n, r in RESOURCES.items()
                   if r["Type"] == "AWS::Serverless::Function" and n not in iam_table.SHARED_ROLES)
WORKERS = ("ProjectorFunction", "IngestionFunction", "SearchIndexFunction", "AuditFunction",  # no routes
           "PortabilityWorkerFunction")
API_FUNCTIONS = [f for f in FUNCTIONS if f not in WORKERS]
TABLE = "agent-memory-acme"
UPLOAD_BUCKET = "agent-memory-acme-uploads"
ACCOUNT = "123456789012"  # moto's
REGION = "us-east-1"
DOMAIN_ARN = f"arn:aws:es:{REGION}:{ACCOUNT}:domain/shared-search"
COLLECTION_ARN = f"arn:aws:aoss:{REGION}:{ACCOUNT}:collection/am-acme-id"
ALIAS = "agent-memory-acme"
# The stack the scenario stands for: a shared managed domain (the stub speaks its API);
# the same requests are also evaluated as the stack's own Serverless collection would see them.
DOMAIN_STACK = {"TenantId": "acme", "SearchBackend": "shared", "OpenSearchService": "es",
                "OpenSearchEndpoint": "https://search.example", "OpenSearchResourceArn": DOMAIN_ARN}
COLLECTION_STACK = {"TenantId": "acme", "SearchBackend": "collection"}
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


# --- the function environment, from template.yaml --------------------------------------


def stack(parameters: dict[str, str], secrets: dict[str, str]) -> iam_policy.Stack:
    """template.yaml as deployed for the test (physical names of the loopback services)."""
    physical = {name: name for name in RESOURCES}
    physical.update({"MemoryTable": TABLE, "UploadBucket": UPLOAD_BUCKET, "CursorSecret": secrets["cursor"],
                     "BootstrapKeySecret": secrets["bootstrap"], "IngestionQueue": secrets.get("ingestion_queue", ""),
                     "ProjectorDeadLetterQueue": secrets.get("projector_dlq", ""),
                     "PortabilityQueue": secrets.get("portability_queue", "")})
    table_arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}"
    attributes = {"FunctionLogGroup.Arn": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:agent-memory-acme-functions:*","MemoryTable.Arn": table_arn, "MemoryTable.StreamArn": f"{table_arn}/stream/2026-01-01T00:00:00.000",
                  "UploadBucket.Arn": f"arn:aws:s3:::{UPLOAD_BUCKET}",
                  "SearchCollection.Arn": COLLECTION_ARN,
                  "SearchCollection.CollectionEndpoint": "https://am-acme-id.us-east-1.aoss.amazonaws.com",
                  "SearchIndexSetup.Alias": ALIAS, "SearchIndexSetup.IndexName": f"{ALIAS}-0", "SearchIndexSetup.Serving": f"{ALIAS}-0",
                  "SearchIndexSetup.NeedsRebuild": "false"}
    for queue in ("IngestionQueue", "IngestionDeadLetterQueue", "ProjectorDeadLetterQueue", "PortabilityQueue",
                  "PortabilityDeadLetterQueue"):
        name = {"IngestionQueue": "ingestion", "ProjectorDeadLetterQueue": "projector-dlq",
                "PortabilityQueue": "portability"}.get(queue, queue)
        attributes[f"{queue}.Arn"] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
        attributes[f"{queue}.QueueName"] = name
    for name in FUNCTIONS:
        attributes[f"{name}Role.Arn"] = f"arn:aws:iam::{ACCOUNT}:role/{name}Role"
        attributes[f"{name}.Arn"] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
    attributes["ProjectorRole.Arn"] = f"arn:aws:iam::{ACCOUNT}:role/ProjectorRole"
    return iam_policy.Stack(TEMPLATE, parameters, physical, attributes, region=REGION, account=ACCOUNT)


def function_env(name: str, moto: str, search_url: str, secrets: dict[str, str]) -> dict[str, str]:
    deployed = stack(DOMAIN_STACK, secrets)
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    own = ((RESOURCES[name]["Properties"].get("Environment") or {}).get("Variables")) or {}
    env = {k: str(v) for k, v in deployed.resolve({**variables, **own}).items()}
    env.update({
        # Models: the offline provider, through the same environment variables a stack sets.
        "AGENT_MEMORY_MODELS_EXTRACTION": "offline/deterministic", "AGENT_MEMORY_MODELS_RESPONSE": "offline/deterministic",
        "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1", "AGENT_MEMORY_OPENSEARCH_ENGINE": "lucene",
        # this function's own port on the search stub, so each request is attributed to it
        "AGENT_MEMORY_OPENSEARCH_URL": search_url,
        "AWS_LAMBDA_FUNCTION_NAME": name, "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
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

    def __init__(self, name: str, build: Path, env: dict[str, str], layer: Path | None = None,
                 step_ms: int | None = None):
        """``step_ms``: each invocation's remaining time falls by this much with each read
        (lambda_harness.py) rather than with the clock."""
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-B", "-I", "-S", str(HARNESS), str(build / name), str(layer or layer_root(build)),
             str(function_timeout(name)), *([str(step_ms)] if step_ms is not None else [])],
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

    def finish(self) -> list[list[Any]]:
        self.proc.stdin.write('"done"\n')
        self.proc.stdin.flush()
        calls = self._read()["calls"]
        self.proc.wait(timeout=30)
        self._drain.join(timeout=5)
        return calls


def handler_function(handler_path: str) -> str:
    folder = handler_path.split("/")[1]
    return next(n for n in FUNCTIONS if RESOURCES[n]["Properties"]["CodeUri"] == f"functions/{folder}/")




def create_key(moto_endpoint: str, principal: str, *flags: str) -> str:
    """The operator's step: a key written to the table with the CLI (their own credentials)."""
    created = subprocess.run(
        [str(Path(sys.executable).parent / "agent-memory"), "keys", "create", "--table", TABLE,
         "--principal", principal, *flags],
        capture_output=True, text=True, timeout=120,
        env={**aws_env(moto_endpoint), "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert created.returncode == 0, created.stderr
    return created.stdout.split("store it now): ")[1].strip()


def presigned_target(url: str) -> dict[str, str]:
    """Bucket and key a presigned PUT writes (path-style on moto_server, else virtual-host)."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(url)
    parts = unquote(parsed.path).lstrip("/").split("/", 1)
    if parsed.hostname and parsed.hostname.startswith(UPLOAD_BUCKET + "."):
        return {"Bucket": UPLOAD_BUCKET, "Key": unquote(parsed.path).lstrip("/")}
    return {"Bucket": parts[0], "Key": parts[1]}


@pytest.fixture(scope="module")
def deployed(build: Path, moto_endpoint: str) -> Iterator[dict[str, Any]]:
    """Drives the scenario through the artifacts; yields what each part observed."""
    import boto3

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    aws = {"endpoint_url": moto_endpoint, "region_name": REGION, "aws_access_key_id": "testing",
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
    secrets["portability_queue"] = sqs.create_queue(QueueName="portability")["QueueUrl"]
    boto3.client("s3", **aws).create_bucket(Bucket=UPLOAD_BUCKET)
    keys = {"ops": create_key(moto_endpoint, "ops", "--group", "support", "--admin")}
    for principal, flags in route_scenario.EXAMPLE_KEYS.items():
        keys[principal] = create_key(moto_endpoint, principal, *flags)
    cluster = SearchCluster()
    gateway = LocalGateway(REPO)
    processes: dict[str, FunctionProcess] = {}
    statuses: dict[str, list[tuple[str, int]]] = {}
    anonymous: dict[str, int] = {}
    unknown_key: dict[str, int] = {}
    health_without_key: list[int] = []
    presigned: list[list[Any]] = []

    # The API as the functions reach it over HTTP (API Gateway at the stack's URL): the MCP
    # route's tool calls come back through it, as events to the function each route names.
    api = LoopbackApi(lambda *request: invoke_route(*request))  # (defined below)

    def process(name: str) -> FunctionProcess:
        if name not in processes:
            env = function_env(name, moto_endpoint, cluster.listen(name), secrets)
            env["AGENT_MEMORY_API_URL"] = api.url
            processes[name] = FunctionProcess(name, build, env)
        return processes[name]

    def invoke_route(method: str, path: str, query: str, hdrs: dict[str, str], data: bytes) -> dict[str, Any]:
        route, params = gateway.match(method, path)
        name = handler_function(route.handler)
        result = process(name).invoke(build_event(route, method, path, query, hdrs, data, params, "203.0.113.9"))
        statuses.setdefault(name, []).append((route.route_key, result["statusCode"]))
        return result

    def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
             key: str = "ops") -> tuple[int, Any]:
        target_path, _, query = path.partition("?")
        route, params = gateway.match(method, target_path)
        name = handler_function(route.handler)
        # bytes go as they are (an NDJSON import), anything else as JSON
        data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
        # The bootstrap key for the first call (as the README's first curl), stored keys after.
        bearer = bootstrap_key if path == "/api/v1/health" else keys[key]
        hdrs = {"content-type": "application/json", "authorization": f"Bearer {bearer}", **(headers or {})}
        if path == "/api/v1/health":  # the one route open to a caller without a key (a probe)
            no_key = {k: v for k, v in hdrs.items() if k != "authorization"}
            event = build_event(route, method, target_path, query, no_key, data, params, "203.0.113.9")
            health_without_key.append(process(name).invoke(event)["statusCode"])
        elif name not in anonymous:  # every function refuses a caller without a key, first
            no_key = {k: v for k, v in hdrs.items() if k != "authorization"}
            event = build_event(route, method, target_path, query, no_key, data, params, "203.0.113.9")
            anonymous[name] = process(name).invoke(event)["statusCode"]
            # ... and one whose key is no stored key: refusing it compares it with the
            # bootstrap key, which every API function may therefore read.
            wrong = {**no_key, "authorization": "Bearer am_live_not-a-key-of-this-stack"}
            event = build_event(route, method, target_path, query, wrong, data, params, "203.0.113.9")
            unknown_key[name] = process(name).invoke(event)["statusCode"]
        result = process(name).invoke(build_event(route, method, target_path, query, hdrs, data, params,
                                                  "203.0.113.9"))
        statuses.setdefault(name, []).append((route.route_key, result["statusCode"]))
        text = result.get("body") or ""
        ndjson = "ndjson" in str((result.get("headers") or {}).get("Content-Type", ""))  # an export: lines
        payload = json.loads(text) if text and text.lstrip()[:1] in "{[" and not ndjson else text
        if isinstance(payload, dict) and payload.get("uploadUrl"):
            # The caller's PUT to S3 is authorised as the signer (the documents function, or the
            # administration function for an import job's upload).
            presigned.append([name, "s3", "PutObject", presigned_target(payload["uploadUrl"])])
        if isinstance(payload, dict) and payload.get("downloadUrl"):  # an export job's download: its GET
            presigned.append([name, "s3", "GetObject", presigned_target(payload["downloadUrl"])])
        return result["statusCode"], payload

    try:
        # The deploy step, as `sam deploy` runs it before any function exists.
        cfn = CloudFormationSide()
        setup = FunctionProcess("SearchIndexFunction", build,
                                function_env("SearchIndexFunction", moto_endpoint,
                                             cluster.listen("SearchIndexFunction"), secrets))
        setup.invoke({"RequestType": "Create", "ResponseURL": cfn.url, "StackId": "stack", "RequestId": "r1",
                      "LogicalResourceId": "SearchIndexSetup", "ResourceProperties": {}})
        route_scenario.run(call)
        route_scenario.run_modes(call)
        # Export and import as jobs: the administration function queues them and signs the URLs,
        # the worker (the same code, its own role) runs them from the portability queue.
        portability = FunctionProcess("PortabilityWorkerFunction", build,
                                      function_env("PortabilityWorkerFunction", moto_endpoint,
                                                   cluster.listen("PortabilityWorkerFunction"), secrets))
        job_form = run_job_form(call, sqs, secrets["portability_queue"], portability)
        # The jobs the documents function queued, delivered as Lambda's SQS event source does.
        messages = sqs.receive_message(QueueUrl=secrets["ingestion_queue"], MaxNumberOfMessages=10)["Messages"]
        ingestion = FunctionProcess("IngestionFunction", build,
                                    function_env("IngestionFunction", moto_endpoint,
                                                 cluster.listen("IngestionFunction"), secrets))
        jobs = ingestion.invoke({"Records": [{"messageId": m["MessageId"], "body": m["Body"],
                                              "eventSource": "aws:sqs"} for m in messages]})
        ingested = {}
        for m in messages:  # every document the scenario kept (the one deleted while queued: 404)
            doc_id = json.loads(m["Body"])["document_id"]
            status, ingested[doc_id] = call("GET", f"{route_scenario.CTX}/documents/{doc_id}")
            if status == 404:
                del ingested[doc_id]
        # One ingested document reprocessed from its original: the worker reads it back from S3.
        again_id = next(d for d, doc in ingested.items() if doc["title"] == "Visitors")
        status, payload = call("PUT", f"{route_scenario.CTX}/documents/{again_id}")
        assert status == 202 and payload["queued"] is True, payload
        requeued = sqs.receive_message(QueueUrl=secrets["ingestion_queue"], MaxNumberOfMessages=10)["Messages"]
        reprocessed = ingestion.invoke({"Records": [{"messageId": m["MessageId"], "body": m["Body"],
                                                     "eventSource": "aws:sqs"} for m in requeued]})
        status, ingested[again_id] = call("GET", f"{route_scenario.CTX}/documents/{again_id}")
        records = stream_records(boto3.client("dynamodbstreams", **aws), dynamodb)
        projector = FunctionProcess("ProjectorFunction", build,
                                    function_env("ProjectorFunction", moto_endpoint,
                                                 cluster.listen("ProjectorFunction"), secrets))
        batch = projector.invoke({"Records": records})
        route_scenario.run_after_projection(call)
        # The lifecycle schedule's event (LifecycleScheduleRule), once the index holds the units.
        scheduled = process("FactsFunction").invoke({"care": "lifecycle"})
        outage = projector_outage(projector, cluster, sqs, secrets["projector_dlq"], records)
        calls = {name: p.finish() for name, p in processes.items()}
        for signer, *presigned_call in presigned:
            calls.setdefault(signer, []).append(presigned_call)
        # The audit's cost rows: the lines the API functions printed, delivered as the log
        # subscription (AuditLogSubscription) delivers them.
        cost_lines = [line for p in processes.values() for line in "".join(p.stderr).splitlines()
                      if '"auditRecord"' in line]
        audit = FunctionProcess("AuditFunction", build,
                                function_env("AuditFunction", moto_endpoint, cluster.listen("AuditFunction"), secrets))
        audited = {"lines": len(cost_lines), "result": audit.invoke(subscription_event(cost_lines)),
                   "stored": stored_cost_rows(dynamodb), "key_use": key_use_rows(dynamodb),
                   "used": {json.loads(line[line.index("{"):])["auditRecord"]["data"].get("keyId")
                            for line in cost_lines} - {None}}
        workers = {"ProjectorFunction": projector, "IngestionFunction": ingestion, "SearchIndexFunction": setup,
                   "AuditFunction": audit, "PortabilityWorkerFunction": portability}
        for name, worker in workers.items():
            calls[name] = worker.finish()
        output = {name: "".join(p.stderr) for name, p in {**processes, **workers}.items()}
        if os.environ.get("AGENT_MEMORY_DUMP_CALLS"):  # what each function called, for a reader of a failure
            Path(os.environ["AGENT_MEMORY_DUMP_CALLS"]).write_text(json.dumps(
                {"calls": calls, "search": cluster.requests, "secrets": secrets}, indent=1, default=str))
        yield {"statuses": statuses, "anonymous": anonymous, "unknown_key": unknown_key,
               "health_without_key": health_without_key, "calls": calls, "records": records, "batch": batch,
               "jobs": jobs, "messages": messages, "ingested": ingested, "cfn": cfn.responses,
               "search": {n: list(r) for n, r in cluster.requests.items()}, "cluster": cluster,
               "bulk": list(cluster.bulk_bodies), "ready": {n: p.ready for n, p in processes.items()},
               "output": output, "keys": [bootstrap_key, *keys.values()], "secrets": secrets,
               "outage": outage, "scheduled": scheduled, "audited": audited,
               "reprocessed": {"jobs": len(requeued), "result": reprocessed, "id": again_id},
               "job_form": job_form}
    finally:
        for p in processes.values():
            if p.proc.poll() is None:
                p.proc.kill()
        cluster.close()
        api.close()


def run_job_form(call: Any, sqs: Any, queue: str, worker: FunctionProcess) -> dict[str, Any]:
    """An export job and an import job of the scenario's context, as a client runs them: the
    routes, the presigned PUT and download against moto_server, and the queued jobs delivered
    to the built worker as Lambda's SQS event source does."""
    import httpx

    ctx = route_scenario.CTX
    # With the principals' grant versions: the worker reads them as GET /export does (a Query).
    status, export = call("POST", f"{ctx}/export/jobs", {"includePrincipals": True})
    assert status == 202, export
    status, inline = call("GET", f"{ctx}/export?includePrincipals=true")
    assert status == 200
    data = inline.encode()
    status, imp = call("POST", f"{ctx}/import/jobs", {"size": len(data)})
    assert status == 201, imp
    put = httpx.put(imp["uploadUrl"], content=data, headers=imp["uploadHeaders"], timeout=30)
    assert put.status_code == 200, put.text
    status, started = call("POST", f"{ctx}/import/jobs/{imp['id']}/start")
    assert status == 202, started
    results = []
    for _ in range(2):
        for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []):
            results.append(worker.invoke({"Records": [{"messageId": m["MessageId"], "body": m["Body"],
                                                       "eventSource": "aws:sqs"}]}))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
    status, exported = call("GET", f"{ctx}/export/jobs/{export['id']}")
    assert status == 200, exported
    download = httpx.get(exported["downloadUrl"], timeout=30) if exported.get("downloadUrl") else None
    status, imported = call("GET", f"{ctx}/import/jobs/{imp['id']}")
    assert status == 200, imported
    return {"results": results, "export": exported, "import": imported, "inline": inline,
            "download": download.content.decode() if download is not None else None,
            "download_status": download.status_code if download is not None else None}


class LoopbackApi:
    """A loopback stand-in for the stack's API URL: each HTTP request becomes the v2 event
    ``gateway_invoke`` hands its route's function, and that function's response is written back."""

    def __init__(self, gateway_invoke: Any):
        import base64
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                path, _, query = self.path.partition("?")
                data = self.rfile.read(int(self.headers.get("content-length") or 0))
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                result = gateway_invoke(self.command, path, query, hdrs, data)
                body = result.get("body") or ""
                raw = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
                self.send_response(result["statusCode"])
                for k, v in (result.get("headers") or {}).items():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(k, v)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def stored_cost_rows(dynamodb: Any) -> int:
    from agent_memory.adapters.dynamodb_store import record_from_image

    found = 0
    for page in dynamodb.get_paginator("scan").paginate(TableName=TABLE):
        found += sum(1 for item in page["Items"] if item["pk"]["S"].endswith("#audit")
                     and record_from_image(item).data.get("reason") == "usage")
    return found


def key_use_rows(dynamodb: Any) -> dict[str, str]:
    from agent_memory.access.key_use import KEY_USE_PK

    items = dynamodb.query(TableName=TABLE, KeyConditionExpression="pk = :p",
                           ExpressionAttributeValues={":p": {"S": KEY_USE_PK}})["Items"]
    from agent_memory.adapters.dynamodb_store import record_from_image

    return {item["sk"]["S"]: record_from_image(item).data["lastUsedAt"] for item in items}


def subscription_event(lines: list[str]) -> dict[str, Any]:
    """What CloudWatch Logs hands a subscription's function: the matching lines, gzipped JSON."""
    import base64
    import gzip

    payload = {"messageType": "DATA_MESSAGE", "owner": "000000000000", "logGroup": "functions",
               "logStream": "stream", "subscriptionFilters": ["AuditLogSubscription"],
               "logEvents": [{"id": str(i), "timestamp": 0, "message": line} for i, line in enumerate(lines)]}
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}


def projector_outage(projector: FunctionProcess, cluster: SearchCluster, sqs: Any, dlq: str,
                     records: list[dict[str, Any]]) -> dict[str, Any]:
    """Search fails: the built projector reports the batch (Lambda retries it, then sends its
    stream range to the dead-letter queue, as below); the scheduled redrive leaves the letter
    while search fails and re-projects it once search answers."""
    cluster.down = True
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
    cluster.down = False
    bulk_before = len(cluster.bulk_bodies)
    redriven = projector.invoke({"redrive": "dead-letters"})
    return {"retried": retried, "while_down": while_down, "depth_down": depth_down, "redriven": redriven,
            "depth_after": _depth(sqs, dlq), "bulk": cluster.bulk_bodies[bulk_before:], "shards": len(shards)}


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
    assert deployed["unknown_key"] == {name: 401 for name in API_FUNCTIONS}
    assert deployed["health_without_key"] and set(deployed["health_without_key"]) == {200}


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


def test_the_built_facts_function_runs_the_lifecycle_schedule(deployed):
    """LifecycleScheduleRule's event: decay and expire of every context and partition the
    scenario wrote to; the relation past its end goes, and its search unit with it."""
    run = deployed["scheduled"]
    assert run["stopped"] is None and run["reached"] == run["partitions"] >= 3, run
    assert run["expired"] == 1, run
    method, path, body = deployed["search"]["FactsFunction"][-1]  # the run is the function's last call
    assert (method, path.split("?")[0]) == ("POST", f"/{ALIAS}/_bulk"), (method, path)
    deleted = [json.loads(line)["delete"]["_id"] for line in body.splitlines() if '"delete"' in line]
    assert [i for i in deleted if i.startswith("acme-ctx|rel_")], f"expire removed no relation's search unit: {body[:300]}"
    emf = [json.loads(line) for line in deployed["output"]["FactsFunction"].splitlines()
           if line.startswith("{") and "LifecycleExpired" in line]
    assert [d["LifecycleExpired"] for d in emf] in ([1], [[1]])


def test_the_built_audit_worker_stores_the_cost_rows_the_api_functions_logged(deployed):
    audited = deployed["audited"]
    assert audited["lines"] > 20, "every successful request prints its cost row"
    assert audited["result"] == {"written": audited["lines"], "skipped": 0}
    assert audited["stored"] == audited["lines"]
    # ... and each stored key's last use (GET /keys lastUsedAt), from the same rows
    assert audited["used"] and set(audited["key_use"]) == audited["used"]


def test_the_built_ingestion_worker_ingests_the_queued_documents(deployed):
    # one job per document the scenario uploaded: two synchronous (one deleted while queued)
    # and one through a presigned PUT to S3, which the worker reads
    assert len(deployed["messages"]) == 3
    assert deployed["jobs"] == {"batchItemFailures": []}, deployed["output"]["IngestionFunction"][-4000:]
    kept = deployed["ingested"]
    assert sorted(d["title"] for d in kept.values()) == ["Parking", "Visitors"]
    # ... and one of them again, from its stored original (PUT /documents/{id})
    again = deployed["reprocessed"]
    assert again["jobs"] == 1 and again["result"] == {"batchItemFailures": []}, again
    assert kept[again["id"]]["status"] == "ready" and kept[again["id"]]["version"] == 2, kept[again["id"]]
    for doc in kept.values():
        assert doc["status"] == "ready", doc
        assert doc["chunksDone"] == doc["chunksTotal"] >= 1


def test_the_built_worker_runs_export_and_import_jobs_through_the_bucket(deployed):
    jobs = deployed["job_form"]
    output = deployed["output"]["PortabilityWorkerFunction"][-4000:]
    assert jobs["results"] == [{"batchItemFailures": []}] * 2, output
    assert jobs["export"]["state"] == "succeeded", (jobs["export"], output)
    assert jobs["download_status"] == 200
    # the job's stream is GET /export's, record for record (the trailer's skipped rows may differ)
    assert jobs["download"].splitlines()[1:-1] == jobs["inline"].splitlines()[1:-1]
    assert jobs["import"]["state"] == "succeeded", (jobs["import"], output)
    assert jobs["import"]["result"]["written"] == 0  # the context's own export: everything is there
    assert jobs["import"]["result"]["records"] == jobs["export"]["result"]["records"]


def test_the_built_functions_log_json_lines_and_emf_without_keys_or_text(deployed):
    for name, text in deployed["output"].items():
        lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        emf = [line for line in lines if "_aws" in line]
        logs = [line for line in lines if "_aws" not in line]
        if name != "SearchIndexFunction":  # the deploy step publishes no metrics (its failures fail the deploy)
            assert emf, name
        assert all(d["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "AgentMemory" for d in emf), name
        for key in deployed["keys"]:
            assert key not in text, f"{name} wrote an API key to its output"
        for message in ("printer on floor 2", "I think I work at Globex", "Book trains", "locker code is 1234"):
            assert message not in text, f"{name} logged message text"
        if name not in WORKERS:
            requests = [line for line in logs if line.get("message") == "request"]
            assert requests and all(r["correlation_id"] and r["level"] == "INFO" for r in requests), name
            assert {r.get("principal") for r in requests} <= {"ops", "bootstrap-admin", "alice", "bob", None}
            # every request's document, and the lifecycle schedule's run (facts: no route)
            assert all(("Requests" in d and d["route"] and d["status"]) or "LifecycleExpired" in d for d in emf), name
    projector = [json.loads(line) for line in deployed["output"]["ProjectorFunction"].splitlines()
                 if line.startswith("{") and "_aws" in line]
    assert "ProjectionLag" in projector[0] and projector[0]["ProjectionFailures"] in (0, [0])


# --- least privilege ------------------------------------------------------------------


def role_statements(deployed_stack: iam_policy.Stack, name: str) -> list[dict[str, Any]]:
    """Every statement of the function's role (tests/deploy/iam_table.py), resolved as the stack
    would deploy it. A role attaches no managed policy, AWS's or the stack's: one AWS-managed
    policy (SAM adds AWSLambdaBasicExecutionRole, AWSXrayWriteOnlyAccess or
    AWSLambdaSQSQueueExecutionRole to the roles it generates) would grant on every resource."""
    props = RESOURCES[name]["Properties"]
    assert "Role" in props and "Policies" not in props, f"{name}: a role of its own, from iam_table.py"
    role_name = props["Role"]["Fn::GetAtt"][0]
    role = RESOURCES[role_name]["Properties"]
    attached = deployed_stack.resolve(role.get("ManagedPolicyArns", []))
    assert attached == [], f"{name}: managed policies {attached}"
    return deployed_stack.role_statements(role_name)


def table_arn(table: str, index: str | None = None) -> str:
    arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}"
    return f"{arn}/index/{index}" if index else arn


def model_arn(model_id: str) -> str:
    prefix = model_id.split(".", 1)[0]
    if prefix in ("us", "eu", "apac", "jp", "au", "ca", "global"):
        return f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{model_id}"
    return f"arn:aws:bedrock:{REGION}::foundation-model/{model_id}"


BEDROCK_ACTIONS = {"Converse": "InvokeModel", "ConverseStream": "InvokeModelWithResponseStream",
                   "InvokeModel": "InvokeModel", "InvokeModelWithResponseStream": "InvokeModelWithResponseStream"}


def iam_calls(service: str, operation: str, target: dict[str, Any]) -> list[iam_policy.Call]:
    """A recorded SDK call as the IAM requests AWS evaluates for it."""
    why = f"{service}:{operation} {json.dumps(target, sort_keys=True)[:300]}"
    if service == "dynamodb":
        if operation in ("TransactWriteItems", "TransactGetItems", "BatchGetItem", "BatchWriteItem"):
            return [iam_policy.Call(f"dynamodb:{item.get('Operation', operation)}", table_arn(item["TableName"]),
                                    {"dynamodb:LeadingKeys": item["LeadingKeys"]}, why)
                    for item in target["Items"]]
        if "StreamArn" in target:  # the table's one stream, under the name the stack's resolution gives it
            stream = re.sub(r"/stream/[^/]+$", "/stream/2026-01-01T00:00:00.000", target["StreamArn"])
            return [iam_policy.Call(f"dynamodb:{operation}", stream, {}, why)]
        context = {"dynamodb:LeadingKeys": target["LeadingKeys"]} if "LeadingKeys" in target else {}
        return [iam_policy.Call(f"dynamodb:{operation}", table_arn(target["TableName"], target.get("IndexName")),
                                context, why)]
    if service == "secretsmanager":
        return [iam_policy.Call(f"secretsmanager:{operation}", target["SecretId"], {}, why)]
    if service == "sqs":
        name = target["QueueUrl"].rstrip("/").rsplit("/", 1)[1]
        return [iam_policy.Call(f"sqs:{operation}", f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}", {}, why)]
    if service == "s3":
        action = {"HeadObject": "GetObject"}.get(operation, operation)
        return [iam_policy.Call(f"s3:{action}", f"arn:aws:s3:::{target['Bucket']}/{target['Key']}", {}, why)]
    if service == "bedrock" and operation == "Rerank":
        # One Rerank call, two IAM requests (AWS's rerank prerequisites): the API action,
        # which has no resource, and InvokeModel on the rerank model it runs.
        return [iam_policy.Call("bedrock:Rerank", "*", {}, why),
                iam_policy.Call("bedrock:InvokeModel", target["modelArn"], {}, why)]
    if service == "bedrock":
        return [iam_policy.Call(f"bedrock:{BEDROCK_ACTIONS[operation]}", model_arn(target["modelId"]), {}, why)]
    raise AssertionError(f"no IAM mapping for {why}: extend iam_calls")


def search_calls(requests: list[list[str]]) -> list[iam_policy.Call]:
    """OpenSearch requests as a managed domain's IAM evaluates them (ESHttp<Method> on the path)."""
    return [iam_policy.Call(f"es:ESHttp{method.capitalize()}", f"{DOMAIN_ARN}/{path.split('?')[0].lstrip('/')}",
                            {}, f"{method} {path.split('?')[0]}") for method, path, _ in requests]


# Statements no call in this scenario can reach, each checked elsewhere.
NOT_REACHED = {
    # The scenario's models are offline: which function calls a language model at all is checked
    # below (test_each_function_that_calls_a_language_model_holds_a_grant_for_it), the ARNs each
    # grant allows per function in tests/deploy/test_model_access.py.
    "InvokeExtractionModel": "the scenario's models are offline (test_model_access.py evaluates the ARNs)",
    "InvokeResponseModel": "the scenario's models are offline (test_model_access.py evaluates the ARNs)",
    "InvokeEmbeddingModel": "the scenario's embedder is offline (test_model_access.py evaluates the ARNs)",
    "LambdaWritesLogs": "the Lambda service writes the function's log streams with its role",
    "LambdaPollsTheQueue": "the Lambda service polls the ingestion and portability queues with the workers' roles",
    "LambdaReadsTheStream": "the Lambda service reads the stream with the projector's role",
    "LambdaListsTheStreams": "the Lambda service lists the table's streams with the projector's role",
    "LambdaSendsFailedBatches": "the Lambda service sends failed batches to the dead-letter queue",
    # Tracing: Active. Lambda's X-Ray daemon sends the segments with the role, over UDP from the
    # SDK, never through botocore; sampling is Lambda's (the SDK polls no rules in Lambda), so
    # SAM's AWSXrayWriteOnlyAccess would add three reads, unused: the roles hold the two writes.
    "LambdaSendsTraces": "the Lambda X-Ray daemon sends the function's trace segments",
}


# Granted for a code path this offline scenario cannot reach, per function: (function, Sid
# prefix, action) -> the path. The check fails when such a path is reached after all (then the
# entry goes) or when an entry names nothing granted.
UNREACHED_PATHS = {
    ("FactsFunction", "RecordWrite", "dynamodb:DeleteItem"):
        "forget with purge, and forget's removal of stored idempotent replies citing what went "
        "(services/facts/forget.py, idempotency.py): the stub's searches find nothing to forget",
    ("EntitiesFunction", "RecordWrite", "dynamodb:DeleteItem"):
        "deleting an entity with purge removes its records instead of tombstoning them",
    ("IngestionFunction", "IngestionQueueSend", "sqs:SendMessage"):
        "a delivery that runs out of time hands the rest on as a continuation (functions/ingestion): "
        "the scenario's documents ingest within one delivery",
    ("ChatFunction", "RecordBatchRead", "dynamodb:BatchGetItem"):
        "a turn's entity lookups when its context holds more entities than one list read returns "
        "(services/facts/write.py), and the live check of search hits: the stub's searches find nothing",
    ("ChatFunction", "RecordWrite", "dynamodb:DeleteItem"):
        "the answer cache evicting entries beyond its limit (chat/cache.py _evict)",
    ("FactsFunction", "DocumentObjectsDelete", "s3:DeleteObject"):
        "forget hitting a document's chunk removes the document's original (services/facts/forget.py): "
        "the stub's searches find nothing to forget (tests/documents/test_originals_removed.py runs it on moto S3)",
    ("FactsFunction", "DocumentObjectsHead", "s3:GetObject"):
        "verify of a receipt naming a document's original or staged upload looks for it with HeadObject: "
        "the stub's searches find nothing to forget, so no receipt names one "
        "(tests/documents/test_originals_removed.py runs verify on moto S3)",
    ("FactsFunction", "UploadBucketList", "s3:ListBucket"):
        "never called: it makes S3 answer that HeadObject 404, not 403, for an object that is gone",
    ("AdministrationFunction", "UploadPut", "s3:PutObject"):
        "POST /import writing an original not kept yet: the scenario imports its own context's export "
        "before any document is uploaded (tests/http/test_export_import.py writes originals on moto S3)",
    ("PortabilityWorkerFunction", "OriginalsWrite", "s3:PutObject"):
        "an import job writes the originals a stream carries that are not kept yet: the scenario imports its "
        "own context's export, whose originals are all there (tests/http/test_export_import.py writes them)",
    ("PortabilityWorkerFunction", "PrincipalGrantsPut", "dynamodb:PutItem"):
        "an import job writing grant versions not there yet: the scenario imports its own context's export, "
        "whose grant versions are all there (tests/http/test_export_import.py imports them into another context)",
    ("AdministrationFunction", "DocumentObjectsDelete", "s3:DeleteObject"):
        "scope forget of a subtree holding a document removes its original (services/operations/scope_registry.py): "
        "the scenario's scoped write is a fact (tests/documents/test_originals_removed.py runs it on moto S3)",
}


def function_calls(deployed: dict[str, Any], name: str) -> list[iam_policy.Call]:
    calls = [c for service, operation, target in deployed["calls"].get(name, [])
             for c in iam_calls(service, operation, target)]
    return calls + search_calls(deployed["search"].get(name, []))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_call_of_each_function_is_allowed_by_its_policies_with_resources_and_conditions(deployed, name):
    statements = role_statements(stack(DOMAIN_STACK, deployed["secrets"]), name)
    denied = [c.why for c in function_calls(deployed, name) if iam_policy.decide(statements, c) is None]
    assert denied == [], f"{name} makes calls its role does not allow"


@pytest.mark.parametrize("name", FUNCTIONS)
def test_no_statement_of_a_function_grants_what_none_of_its_calls_needs(deployed, name):
    statements = role_statements(stack(DOMAIN_STACK, deployed["secrets"]), name)
    used = {(sid, c.action.lower()) for c in function_calls(deployed, name)
            for sid in iam_policy.decide(statements, c) or ()}
    unused, exempt = [], set()
    for sid, action in iam_policy.granted_pairs(statements):
        assert iam_policy.action_exists(action), f"{name}: {action} is no IAM action"
        if any(sid.startswith(k) for k in NOT_REACHED):
            continue
        reached = any(s == sid and iam_policy.wildcard(action, a, ignore_case=True) for s, a in used)
        entry = next((k for k in UNREACHED_PATHS if k[0] == name and sid.startswith(k[1]) and k[2] == action), None)
        if entry is not None:
            assert not reached, f"{entry} is reached now: drop it from UNREACHED_PATHS"
            exempt.add(entry)
        elif not reached:
            unused.append(f"{sid}: {action}")
    assert unused == [], f"{name} is granted what none of its calls needs: {unused}"
    assert exempt == {k for k in UNREACHED_PATHS if k[0] == name}, "an UNREACHED_PATHS entry names nothing granted"


# Functions granted a language model (extraction or response) whose scenario makes no model call,
# with the path that calls it. The check fails when such a function calls one after all.
LANGUAGE_MODEL_UNREACHED: dict[str, str] = {}


def language_model_calls(deployed: dict[str, Any], name: str) -> float:
    """ModelCalls the function's EMF lines counted (MeteredLanguageModel, offline models too)."""
    total = 0.0
    for line in deployed["output"].get(name, "").splitlines():
        if line.startswith("{") and '"ModelCalls"' in line:
            value = json.loads(line).get("ModelCalls", 0)
            total += sum(value) if isinstance(value, list) else value
    return total


def test_each_function_that_calls_a_language_model_holds_a_grant_for_it(deployed):
    """The Bedrock grants the IAM replay exempts (offline models): a function whose requests
    called a language model holds the extraction or response grant its table line names, and a
    function that holds one calls it (or says which path does)."""
    holders = set()
    for name in FUNCTIONS:
        sids = {s["Sid"] for s in role_statements(stack(DOMAIN_STACK, deployed["secrets"]), name)}
        if sids & {"InvokeExtractionModel", "InvokeResponseModel"}:
            holders.add(name)
    callers = {name for name in FUNCTIONS if language_model_calls(deployed, name) > 0}
    assert callers <= holders, f"{sorted(callers - holders)} call a language model without a grant"
    assert holders - callers == set(LANGUAGE_MODEL_UNREACHED), \
        f"granted a language model, no call in the scenario: {sorted(holders - callers)}"


def test_only_the_administration_function_writes_an_api_key_record(deployed):
    for name in FUNCTIONS:
        if name == "AdministrationFunction":
            continue
        writes = [c for c in function_calls(deployed, name)
                  if c.action in ("dynamodb:PutItem", "dynamodb:DeleteItem")
                  and any(str(k).startswith("t#") for k in c.context.get("dynamodb:LeadingKeys", []))]
        assert writes == [], name
        statements = role_statements(stack(DOMAIN_STACK, deployed["secrets"]), name)
        for action in ("dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:UpdateItem"):
            forged = iam_policy.Call(action, table_arn(TABLE), {"dynamodb:LeadingKeys": ["t#api-keys"]})
            assert iam_policy.decide(statements, forged) is None, f"{name} could {action} an API key"


def test_only_the_api_functions_can_read_the_bootstrap_key(deployed):
    read = iam_policy.Call("secretsmanager:GetSecretValue", deployed["secrets"]["bootstrap"])
    readers = {n for n in FUNCTIONS if iam_policy.decide(role_statements(stack(DOMAIN_STACK, deployed["secrets"]), n), read)}
    assert readers == set(API_FUNCTIONS)


def test_the_deploy_step_made_the_index_and_no_function_creates_one(deployed):
    (answer,) = deployed["cfn"]
    assert answer["Status"] == "SUCCESS", answer
    index = answer["Data"]["IndexName"]
    assert answer["Data"]["Alias"] == ALIAS and index.startswith(f"{ALIAS}-")
    assert deployed["cluster"].aliases == {ALIAS: {index}}
    for name, requests in deployed["search"].items():
        if name == "SearchIndexFunction":
            continue
        paths = {p.split("?")[0] for _, p, _ in requests}
        assert {p for p in paths if not p.startswith(f"/{ALIAS}/")} == set(), f"{name} called outside its alias"
        assert not [m for m, p, _ in requests if m in ("PUT", "HEAD") and p.strip("/").count("/") == 0], name


def test_on_the_stacks_own_collection_each_request_is_in_its_data_access_policy(deployed):
    """The same requests as OpenSearch Serverless would authorise them: IAM opens the
    collection's API (aoss:APIAccessAll), the data access policy names index permissions."""
    own = stack(COLLECTION_STACK, deployed["secrets"])
    policy = json.loads(own.resolve(RESOURCES["SearchDataAccessPolicy"]["Properties"]["Policy"]))
    used: dict[str, set[tuple[str, str]]] = {}
    for name, requests in deployed["search"].items():
        if not requests:
            continue
        role = own.attributes[f"{name}Role.Arn"] if name != "ProjectorFunction" else own.attributes["ProjectorRole.Arn"]
        statements = role_statements(own, name)
        assert iam_policy.decide(statements, iam_policy.Call("aoss:APIAccessAll", COLLECTION_ARN)), name
        for method, path, body in requests:
            for permission, kind, target in iam_policy.aoss_permissions(method, path, body):
                assert iam_policy.data_policy_allows(policy, role, "am-acme", permission, kind, target), \
                    f"{name}: {method} {path} needs {permission} on {kind} {target}"
                used.setdefault(role, set()).add((kind, permission))
    # Each rule set's permissions are used by some principal it names (on Serverless a writer's
    # revision check also reads, which these domain-shaped requests do not show for each one).
    for rule_set in policy:
        granted = {(rule["ResourceType"], p) for rule in rule_set["Rules"] for p in rule["Permission"]}
        by_any = set().union(*(used.get(principal, set()) for principal in rule_set["Principal"]))
        assert granted - by_any == set(), f"{rule_set['Principal']} are granted what none of them uses"


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


# --- ingestion that continues, on the built worker ------------------------------------


def _artifact_state(*roots: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for root in roots for p in root.rglob("*")}


def test_the_built_worker_continues_a_document_over_three_invocations_with_no_failed_receive(
        build: Path, moto_endpoint: str):
    """The built ingestion worker against moto SQS with the queue as template.yaml makes it
    (visibility timeout, redrive policy to a dead-letter queue), delivered as Lambda's event
    source does (one message a batch; receive, invoke, delete unless reported failed). Each
    invocation starts at the function's timeout and its context's remaining time falls 90 s
    with each read, so the worker starts three model calls, then stops and hands the rest on.
    One call reads a window of up to three chunks (``limits.document_window_chars`` by default),
    so a 27-chunk document takes three invocations and spends none of the queue's receives."""
    import boto3

    from agent_memory.adapters.dynamodb_table import create_table_from_template

    aws = {"endpoint_url": moto_endpoint, "region_name": REGION, "aws_access_key_id": "testing",
           "aws_secret_access_key": "testing"}
    dynamodb = boto3.client("dynamodb", **aws)
    if TABLE not in dynamodb.list_tables()["TableNames"]:  # the scenario above may have made it
        create_table_from_template(dynamodb, TABLE, REPO / "template.yaml")
    sm = boto3.client("secretsmanager", **aws)
    bootstrap_key = "bootstrap-" + os.urandom(16).hex()
    secrets = {"cursor": sm.create_secret(Name="continues-cursor", SecretString=os.urandom(32).hex())["ARN"],
               "bootstrap": sm.create_secret(Name="continues-bootstrap", SecretString=bootstrap_key)["ARN"]}
    sqs = boto3.client("sqs", **aws)
    queue = RESOURCES["IngestionQueue"]["Properties"]
    dlq = sqs.create_queue(QueueName="continues-ingestion-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    url = sqs.create_queue(QueueName="continues-ingestion", Attributes={
        "VisibilityTimeout": str(queue["VisibilityTimeout"]),
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn,
                                     "maxReceiveCount": str(queue["RedrivePolicy"]["maxReceiveCount"])})})["QueueUrl"]
    secrets.update(ingestion_queue=url, projector_dlq=sqs.create_queue(QueueName="continues-projector-dlq")["QueueUrl"])
    key = create_key(moto_endpoint, "continues-ops", "--group", "support", "--admin")
    cluster = SearchCluster()
    gateway = LocalGateway(REPO)
    before = _artifact_state(build / "IngestionFunction", build / "DocumentsFunction", layer_root(build))
    documents = FunctionProcess("DocumentsFunction", build,
                                function_env("DocumentsFunction", moto_endpoint, cluster.listen("DocumentsFunction"),
                                             secrets))
    # 300 s at the start, 90 s a read: 300, 210, 120 s (three calls started), then 30 s < the
    # worker's one-minute stop margin.
    worker = FunctionProcess("IngestionFunction", build,
                             function_env("IngestionFunction", moto_endpoint, cluster.listen("IngestionFunction"),
                                          secrets), step_ms=90_000)
    assert function_timeout("IngestionFunction") == 300
    try:
        def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
            route, params = gateway.match(method, path)
            hdrs = {"content-type": "application/json", "authorization": f"Bearer {key}"}
            data = json.dumps(body).encode() if body is not None else b""
            result = documents.invoke(build_event(route, method, path, "", hdrs, data, params, "203.0.113.9"))
            return result["statusCode"], json.loads(result.get("body") or "null")

        ctx = "/api/v1/continues-ctx"
        # Each section fills most of a chunk (1,200 characters), so no two share one.
        filler = " ".join(["Requests go through the service desk before the end of the month."] * 15)
        sections = "\n\n".join(f"## Policy {i}\n\nEmployee{i} works at Company{i}. {filler}" for i in range(27))
        status, doc = call("POST", f"{ctx}/documents", {"title": "Policies", "text": f"# Policies\n\n{sections}"})
        assert status == 202, doc
        assert doc["chunksTotal"] == 27, doc

        deliveries = []
        for _ in range(20):
            got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=0,
                                      AttributeNames=["ApproximateReceiveCount"]).get("Messages", [])
            if not got:
                break
            message = got[0]
            result = worker.invoke({"Records": [{"messageId": message["MessageId"], "body": message["Body"],
                                                 "eventSource": "aws:sqs"}]})
            failed = {f["itemIdentifier"] for f in result["batchItemFailures"]}
            if message["MessageId"] not in failed:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            deliveries.append({"body": json.loads(message["Body"]), "failed": bool(failed),
                               "receives": int(message["Attributes"]["ApproximateReceiveCount"])})
        else:
            raise AssertionError(f"the queue never drained: {''.join(worker.stderr)[-3000:]}")

        status, final = call("GET", f"{ctx}/documents/{doc['id']}")
        assert status == 200 and final["status"] == "ready", final
        assert final["chunksDone"] == final["chunksTotal"] == 27
        assert len(deliveries) >= 3, deliveries
        assert [(d["body"].get("continuation", 0), d["body"].get("progress", 0)) for d in deliveries] == [
            (0, 0), (1, 9), (2, 18)]  # each invocation took three windows further and handed on the rest
        assert [d["failed"] for d in deliveries] == [False] * 3, ''.join(worker.stderr)[-3000:]
        assert [d["receives"] for d in deliveries] == [1] * 3  # no receive spent on running out of time
        assert _depth(sqs, dlq) == 0 and _depth(sqs, url) == 0
    finally:
        calls = worker.finish()
        documents.finish()
        cluster.close()
    # Every chunk stored once: 27 chunk rows written by 27 puts over the three invocations.
    chunk_pk = next(c[2]["LeadingKeys"][0] for c in calls
                    if c[1] == "PutItem" and c[2]["LeadingKeys"][0].endswith(f"#chunks#{doc['id']}"))
    puts = [c for c in calls if c[1] == "PutItem" and c[2]["LeadingKeys"] == [chunk_pk]]
    assert len(puts) == 27
    rows = dynamodb.query(TableName=TABLE, KeyConditionExpression="pk = :p",
                          ExpressionAttributeValues={":p": {"S": chunk_pk}})["Items"]
    assert sorted(r["sk"]["S"] for r in rows) == [f"{i:06d}" for i in range(27)]
    # ... and the artifact is as sam build left it.
    assert _artifact_state(build / "IngestionFunction", build / "DocumentsFunction", layer_root(build)) == before


# --- reranking through Bedrock (RerankModel) ---------------------------------------------


class RerankStub:
    """A loopback ``bedrock-agent-runtime`` endpoint: ``POST /rerank`` scores each text by
    whether it holds ``word``; ``fail`` answers a throttling error instead. Records each
    request's body and its SigV4 credential scope."""

    def __init__(self, word: str):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stub = self
        self.word, self.fail, self.requests = word, False, []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                stub.requests.append({"path": self.path, "body": body,
                                      "scope": self.headers.get("authorization", "").split("Credential=")[-1]
                                      .split(",")[0].split("/", 1)[-1]})
                if stub.fail:
                    payload, status = {"message": "Too many requests"}, 429
                    headers = {"x-amzn-ErrorType": "ThrottlingException"}
                else:
                    texts = [s["inlineDocumentSource"]["textDocument"]["text"] for s in body["sources"]]
                    payload, status, headers = {"results": [{"index": i, "relevanceScore": 1.0 if stub.word in t.lower()
                                                             else 0.0} for i, t in enumerate(texts)]}, 200, {}
                data = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in {"content-type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


RERANK_MODEL = "amazon.rerank-v1:0"


def test_the_built_recall_function_reranks_through_bedrock_and_keeps_the_fused_order_when_it_fails(
        deployed, build: Path, moto_endpoint: str):
    stub = RerankStub("lisbon")
    env = function_env("RecallFunction", moto_endpoint, deployed["cluster"].listen("RecallRerank"), deployed["secrets"])
    env.update({"AGENT_MEMORY_MODELS_RERANKER": f"bedrock/{RERANK_MODEL}",
                "AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME": stub.url})
    recall = FunctionProcess("RecallFunction", build, env)
    gateway = LocalGateway(REPO)
    ops_key = deployed["keys"][1]

    def query(text: str) -> dict[str, Any]:
        route, params = gateway.match("POST", f"{route_scenario.CTX}/query")
        event = build_event(route, "POST", f"{route_scenario.CTX}/query", "",
                            {"content-type": "application/json", "authorization": f"Bearer {ops_key}"},
                            json.dumps({"query": text, "k": 5}).encode(), params, "203.0.113.9")
        result = recall.invoke(event)
        assert result["statusCode"] == 200, result
        return json.loads(result["body"])

    try:
        reranked = query("Where do I live?")
        stub.fail = True
        throttled = query("Where do I live?")
        calls = recall.finish()
    finally:
        if recall.proc.poll() is None:
            recall.proc.kill()
        stub.close()
    assert reranked["trace"]["rerank"]["model"] == f"bedrock/{RERANK_MODEL}", reranked["trace"]
    assert "failed" not in reranked["trace"]["rerank"]
    assert "lisbon" in reranked["hits"][0]["text"].lower()
    assert throttled["trace"]["rerank"]["failed"] == "ThrottlingException"  # the fused order, and a 200
    sent = stub.requests[0]
    assert sent["path"] == "/rerank" and sent["scope"].endswith(f"/{REGION}/bedrock/aws4_request")  # <date>/...
    model_arn = f"arn:aws:bedrock:{REGION}::foundation-model/{RERANK_MODEL}"
    config = sent["body"]["rerankingConfiguration"]["bedrockRerankingConfiguration"]
    assert config["modelConfiguration"]["modelArn"] == model_arn
    assert config["numberOfResults"] == len(sent["body"]["sources"]) >= 2
    # Each recorded Rerank call is two IAM requests; RerankModel's policy allows both, and
    # without it the function's role allows neither.
    rerank_calls = [c for service, op, target in calls if op == "Rerank" for c in iam_calls(service, op, target)]
    assert {c.action for c in rerank_calls} == {"bedrock:Rerank", "bedrock:InvokeModel"}
    with_reranker = role_statements(stack({**DOMAIN_STACK, "RerankModel": f"bedrock/{RERANK_MODEL}"},
                                          deployed["secrets"]), "RecallFunction")
    assert [c.why for c in rerank_calls if iam_policy.decide(with_reranker, c) is None] == []
    without = role_statements(stack(DOMAIN_STACK, deployed["secrets"]), "RecallFunction")
    assert all(iam_policy.decide(without, c) is None for c in rerank_calls)


# --- the Serverless (aoss) shape of a signed request, on the built artifact ------------------

SERVERLESS_SIGNING = "https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-clients.html"
COLLECTION_ENDPOINT = f"https://am-acme-id.{REGION}.aoss.amazonaws.com"
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# Runs in the built function's interpreter (lambda_harness's paths: the function's folder, the
# layer): the deploy step's handler, as CloudFormation invokes it, with HTTPS sends below the
# client taken as the wire would see them (signed) and answered as a new collection answers.
_SIGNING_SCRIPT = r'''
import json, sys
from urllib.parse import urlsplit
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import requests.adapters, requests.models
sent = []
def send(self, request, **kwargs):
    body = request.body.decode() if isinstance(request.body, bytes) else (request.body or "")
    sent.append({"method": request.method, "url": request.url, "headers": dict(request.headers), "body": body})
    path = urlsplit(request.url).path
    status = 404 if request.method == "HEAD" or path.startswith("/_alias/") else 200
    answer = {"acknowledged": True} if status == 200 else {"error": {"type": "index_not_found_exception"}, "status": 404}
    response = requests.models.Response()
    response.status_code, response.request, response.url = status, request, request.url
    response._content = b"" if request.method == "HEAD" else json.dumps(answer).encode()
    response.headers["content-type"] = "application/json"
    return response
requests.adapters.HTTPAdapter.send = send
import app
answers = []
app.respond = lambda event, status, physical, data=None, reason="": answers.append([status, data, reason])
class Context:
    function_name = "SearchIndexFunction"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:SearchIndexFunction"
    memory_limit_in_mb = 512
    aws_request_id = "req-signing"
    log_group_name = log_stream_name = "signing"
    def get_remaining_time_in_millis(self):
        return int(sys.argv[3]) * 1000
app.lambda_handler({"RequestType": "Create", "ResponseURL": "https://cloudformation.invalid/r", "StackId": "s",
                    "RequestId": "r", "LogicalResourceId": "SearchIndexSetup", "ResourceProperties": {}}, Context())
print(json.dumps({"sent": sent, "answers": answers}))
'''


def test_the_built_deploy_step_signs_its_requests_in_the_serverless_shape(build: Path):
    """The stack's own collection (SearchBackend=collection): the built index step's requests,
    as they leave the client, are SigV4 for service ``aoss`` in the stack's region, carry
    ``x-amz-content-sha256`` (the payload's SHA-256, the empty string's without one) and do not
    sign Content-Length, as AWS requires of Serverless requests (SERVERLESS_SIGNING); the
    signature is recomputed here with botocore's signer from the same credentials (its canonical
    request ends with that same payload hash) and matches."""
    import hashlib
    from urllib.parse import urlsplit

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    own = stack(COLLECTION_STACK, {"cursor": "c", "bootstrap": "b"})
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    mine = RESOURCES["SearchIndexFunction"]["Properties"]["Environment"]["Variables"]
    env = {k: str(v) for k, v in own.resolve({**variables, **mine}).items()}
    assert env["AGENT_MEMORY_OPENSEARCH_SERVICE"] == "aoss" and env["AGENT_MEMORY_OPENSEARCH_URL"] == COLLECTION_ENDPOINT
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "session-token")
    env.update({"AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1", "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
                "AWS_ACCESS_KEY_ID": credentials.access_key, "AWS_SECRET_ACCESS_KEY": credentials.secret_key,
                "AWS_SESSION_TOKEN": credentials.token, "AWS_LAMBDA_FUNCTION_NAME": "SearchIndexFunction",
                "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"})
    proc = subprocess.run([sys.executable, "-B", "-I", "-S", "-c", _SIGNING_SCRIPT, str(build / "SearchIndexFunction"),
                           str(layer_root(build)), str(function_timeout("SearchIndexFunction"))],
                          capture_output=True, text=True, env=env, timeout=120,
                          cwd=str(build / "SearchIndexFunction"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    [[status, data, reason]] = out["answers"]
    assert status == "SUCCESS", reason
    sent = out["sent"]
    index = data["IndexName"]
    assert [(r["method"], urlsplit(r["url"]).path) for r in sent] == [
        ("HEAD", f"/{index}"), ("PUT", f"/{index}"), ("GET", f"/_alias/{ALIAS}"), ("HEAD", f"/{ALIAS}"),
        ("POST", "/_aliases")]
    assert {urlsplit(r["url"]).hostname for r in sent} == {urlsplit(COLLECTION_ENDPOINT).hostname}
    for request in sent:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        algorithm, _, fields = headers["authorization"].partition(" ")
        parts = dict(f.strip().split("=", 1) for f in fields.split(","))
        scope = parts["Credential"].split("/")
        assert algorithm == "AWS4-HMAC-SHA256"
        assert scope[0] == credentials.access_key and scope[2:] == [REGION, "aoss", "aws4_request"], scope
        signed = parts["SignedHeaders"].split(";")
        assert "host" in signed and "content-length" not in signed, signed
        payload = headers["x-amz-content-sha256"]  # sent with every request; the signature covers the same hash
        assert payload in (hashlib.sha256(request["body"].encode()).hexdigest(), "UNSIGNED-PAYLOAD"), request["url"]
        assert request["body"] or payload in (EMPTY_SHA256, "UNSIGNED-PAYLOAD")
        assert headers["x-amz-security-token"] == credentials.token
        # The same request signed by botocore from the same credentials and time has the same signature.
        again = AWSRequest(method=request["method"], url=request["url"], data=request["body"].encode() or None,
                           headers={h: headers[h] for h in signed if h in headers})
        again.context["timestamp"] = headers["x-amz-date"]
        signer = SigV4Auth(credentials, "aoss", REGION)
        canonical = signer.canonical_request(again)
        assert parts["Signature"] == signer.signature(signer.string_to_sign(again, canonical), again), request["url"]
    created = json.loads(sent[1]["body"])
    assert created["mappings"]["properties"]["embedding"]["method"]["engine"] == "faiss"
