"""Deploy preflight: what AWS would refuse in a first ``sam deploy``, found before deploying.

``make preflight`` runs it (with the tools venv's Python, which has ``samtranslator``, SAM's
own translator). For the default parameters and for each optional parameter set
(``CONFIGURATIONS``), it translates template.yaml as SAM does (``openapi.yaml`` included in
place of its ``AWS::Include``), keeps the resources whose conditions hold, resolves the
intrinsics with stand-in names as long as AWS makes them, and checks each quota in ``QUOTAS``
(the value and the page of AWS's documentation that states it). With ``--build-dir`` it also
measures what ``sam build`` made: each function's code plus its layers, unzipped.

Exit status 1 when any check fails; each line of the table names the quota, its limit, the
largest value found and where (configuration and resource).

The checks themselves (``check_*``) take a translated template (plain CloudFormation), so
tests/deploy/test_preflight.py runs them on small over-quota templates without samtranslator.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(Path(__file__).parent) not in sys.path:  # run as a script: its neighbours (stack_figures, iam_table)
    sys.path.insert(0, str(Path(__file__).parent))
if str(REPO / "shared") not in sys.path:  # the tools venv has no agent_memory installed
    sys.path.insert(0, str(REPO / "shared"))

from intrinsics import Intrinsics  # noqa: E402

from agent_memory.cfn_template import load_openapi, load_template  # noqa: E402

IAM_QUOTAS = "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html"
CFN_QUOTAS = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html"
LAMBDA_QUOTAS = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
LAMBDA_CONCURRENCY = "https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html"
HTTP_API_QUOTAS = "https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html"
AOSS_QUOTAS = "https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-limits.html"
AOSS_NAMES = "https://docs.aws.amazon.com/opensearch-service/latest/ServerlessAPIReference/API_CreateCollection.html"
AOSS_POLICY_API = "https://docs.aws.amazon.com/opensearch-service/latest/ServerlessAPIReference/API_CreateAccessPolicy.html"


@dataclass(frozen=True)
class Quota:
    key: str
    what: str
    limit: int
    source: str


# Defaults of a new account; "raisable" ones can be raised in Service Quotas, but a first
# deploy must fit the default.
QUOTAS = {q.key: q for q in (
    Quota("managed-policies-per-role", "managed policies attached to one IAM role", 10, IAM_QUOTAS),
    Quota("role-inline-policy-chars", "inline policies of one role, characters without whitespace", 10_240,
          IAM_QUOTAS),
    Quota("managed-policy-chars", "one customer managed policy, characters without whitespace", 6_144, IAM_QUOTAS),
    Quota("stack-resources", "resources in one stack", 500, CFN_QUOTAS),
    Quota("stack-outputs", "outputs in one template", 200, CFN_QUOTAS),
    Quota("stack-parameters", "parameters in one template", 200, CFN_QUOTAS),
    Quota("template-body-bytes", "template body uploaded to S3 (sam deploy), bytes", 1_048_576, CFN_QUOTAS),
    Quota("env-var-bytes", "one function's environment variables, bytes", 4_096, LAMBDA_QUOTAS),
    Quota("layers-per-function", "layers of one function", 5, LAMBDA_QUOTAS),
    Quota("unzipped-bytes", "function code and its layers, unzipped, bytes", 262_144_000, LAMBDA_QUOTAS),
    Quota("reserved-concurrency", "reserved concurrency of the stack's functions (1,000 per account, 100 kept "
          "unreserved)", 900, LAMBDA_CONCURRENCY),
    Quota("reserved-concurrency-per-account", "reserved concurrency of the tenant stacks one account holds, "
          "each at its default (1,000 per account, 100 kept unreserved)", 900, LAMBDA_CONCURRENCY),
    Quota("http-api-routes", "routes of one HTTP API", 300, HTTP_API_QUOTAS),
    Quota("aoss-name-chars", "OpenSearch Serverless collection and policy names, characters (3-32)", 32,
          AOSS_NAMES),
    Quota("aoss-policy-chars", "one OpenSearch Serverless policy document (data access, encryption, network), "
          "characters", 20_480, AOSS_POLICY_API),
)}

# The longest TenantId the template admits (29 characters: am-<tenant> is 32), so names and
# ARNs are measured at their longest.
LONG_TENANT = "t" * 29
ACCOUNT = "123456789012"
REGION = "ap-southeast-2"
STACK = "agent-memory-" + LONG_TENANT
SHARED_AOSS_ARN = f"arn:aws:aoss:{REGION}:{ACCOUNT}:collection/abcdefghij0123456789"
SHARED_ES_ARN = f"arn:aws:es:{REGION}:{ACCOUNT}:domain/shared-search-domain-name-28"
OPENAI_SECRET = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:openai-api-key-for-agent-memory-AbCdEf"

_ALL_OPTIONS = {
    "RerankModel": "bedrock/cohere.rerank-v3-5:0",
    "OpenAISecretArn": OPENAI_SECRET,
    "ReservedConcurrency": "10",
    "AlarmEmail": "platform-alarms@example.com",
    "LifecycleSchedule": "cron(0 3 * * ? *)",
    "RetentionDays": "365",
    "CorsAllowedOrigins": "https://inspector.example.com,https://inspector-staging.example.com",
    "AllowedModels": "bedrock/eu.anthropic.claude-sonnet-4-6,bedrock/eu.anthropic.claude-haiku-4-5-20251001-v1:0",
    "Architecture": "arm64",
    "SearchAccessPolicyName": "",
}
_SEARCH = {
    "none": {"SearchBackend": "none"},
    "collection": {"SearchBackend": "collection"},
    "shared-aoss": {"SearchBackend": "shared", "OpenSearchService": "aoss", "OpenSearchEndpoint":
                    f"https://abcdefghij0123456789.{REGION}.aoss.amazonaws.com",
                    "OpenSearchResourceArn": SHARED_AOSS_ARN, "OpenSearchCollectionName": "shared-" + "c" * 25},
    "shared-es": {"SearchBackend": "shared", "OpenSearchService": "es", "OpenSearchEndpoint":
                  f"https://search-shared-search-domain-name-28-abcdefghij.{REGION}.es.amazonaws.com",
                  "OpenSearchResourceArn": SHARED_ES_ARN},
}

# Each search mode bare and with every optional parameter set (each option only ever adds
# resources, grants or variables, so "all on" is each mode's largest stack).
CONFIGURATIONS: dict[str, dict[str, str]] = {"defaults": {}}
for _mode, _params in _SEARCH.items():
    CONFIGURATIONS[f"{_mode}"] = dict(_params)
    CONFIGURATIONS[f"{_mode}+all-options"] = {**_params, **_ALL_OPTIONS}


def _longest(prefix: str, length: int, tail: str = "") -> str:
    return prefix + "x" * (length - len(prefix) - len(tail)) + tail


# Every parameter a quota can break at its worst: free strings that reach an environment variable
# or a policy at their MaxLength (model ids as inference profiles, so every routed statement is
# there too), with every option on.
_LONGEST = {
    **_ALL_OPTIONS,
    "ExtractionModel": _longest("bedrock/global.anthropic.", 200),
    "ResponseModel": _longest("bedrock/eu.anthropic.", 200),
    "EmbeddingModel": _longest("bedrock/us.amazon.", 200),
    "AllowedModels": _longest("bedrock/eu.anthropic.", 1000),
    "OpenAISecretArn": _longest(f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:", 512, "-AbCdEf"),
    "LifecycleSchedule": _longest("rate(", 256, ")"),
    "CorsAllowedOrigins": _longest("https://", 1000, ".example.com"),
    "AlarmEmail": _longest("a", 254, "@example.com"),
    # 14 x 63 and the streaming function's default 10: 892, the most one stack may reserve.
    "RetentionDays": "36500", "ReservedConcurrency": "63",
}
CONFIGURATIONS["collection+longest-values"] = {**_SEARCH["collection"], **_LONGEST}
CONFIGURATIONS["shared-es+longest-values"] = {
    **_SEARCH["shared-es"], **_LONGEST,
    "OpenSearchEndpoint": _longest("https://search-", 256, f".{REGION}.es.amazonaws.com"),
    "OpenSearchResourceArn": _longest(f"arn:aws:es:{REGION}:{ACCOUNT}:domain/", 256)}
CONFIGURATIONS["collection+all-options+alarm-topic"] = {
    **_SEARCH["collection"], **_ALL_OPTIONS, "AlarmEmail": "",
    "AlarmTopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:platform-alarms", "SearchAccessPolicyName": "a" * 32}


@dataclass
class Finding:
    quota: str
    value: int
    where: str

    @property
    def ok(self) -> bool:
        return self.value <= QUOTAS[self.quota].limit


# --- translation ---------------------------------------------------------------------------

def sam_input(template_path: Path = REPO / "template.yaml") -> dict[str, Any]:
    """template.yaml as SAM's translator takes it: AWS::Include of openapi.yaml replaced by the
    document (as CloudFormation does before the SAM transform) and local code folders by the
    S3 locations `sam package` would put there."""
    template = load_template(template_path)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            t = node.get("Fn::Transform")
            if len(node) == 1 and isinstance(t, dict) and t.get("Name") == "AWS::Include":
                return load_openapi(template_path.parent / t["Parameters"]["Location"])
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    template = walk(template)
    for res in template["Resources"].values():
        props = res.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://sam-artifacts-bucket/{props[key].strip('/') or 'root'}"
    return template


class _NoIamLookups:
    """The translator asks IAM for AWS managed policy ARNs only for policies named by name;
    the template names none, so nothing is looked up."""

    def load(self) -> dict[str, str]:
        return {}


def translate(template: dict[str, Any], parameters: dict[str, str]) -> dict[str, Any]:
    import os

    from samtranslator.translator.transform import transform

    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)  # the translator's pseudo parameters; no call is made
    logging.getLogger("samtranslator").setLevel(logging.ERROR)  # its metrics notes, one per translation

    values = {**defaults(template), **parameters, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
              "AWS::Partition": "aws", "AWS::StackName": STACK, "AWS::URLSuffix": "amazonaws.com"}
    return transform(copy.deepcopy(template), values, _NoIamLookups())  # type: ignore[arg-type]


def defaults(template: dict[str, Any]) -> dict[str, str]:
    values = {name: str(spec["Default"]) for name, spec in template.get("Parameters", {}).items()
              if "Default" in spec}
    values.setdefault("TenantId", LONG_TENANT)
    return values


# --- resolving a translated template --------------------------------------------------------

class Resolved(Intrinsics):
    """A translated template for one parameter set: conditions evaluated, intrinsics resolved
    with stand-in physical names and ARNs as long as AWS makes them."""

    def __init__(self, template: dict[str, Any], parameters: dict[str, str]) -> None:
        super().__init__()
        self.template, self.region = template, REGION
        self.values = {**defaults(template), **parameters, "AWS::Region": REGION, "AWS::AccountId": ACCOUNT,
                       "AWS::Partition": "aws", "AWS::StackName": STACK, "AWS::URLSuffix": "amazonaws.com"}

    def resources(self) -> dict[str, dict[str, Any]]:
        return {name: res for name, res in self.template["Resources"].items()
                if "Condition" not in res or self.condition(res["Condition"])}

    def outputs(self) -> dict[str, Any]:
        return {name: out for name, out in self.template.get("Outputs", {}).items()
                if "Condition" not in out or self.condition(out["Condition"])}

    def physical(self, logical: str) -> str:
        # CloudFormation's generated names: <stack>-<logical id>-<12 random characters>,
        # cut to the type's maximum; an ARN where Ref gives one.
        res = self.template["Resources"].get(logical)
        if res is None:
            raise KeyError(f"Ref to unknown {logical}")
        kind = res["Type"]
        name = f"{STACK}-{logical}-ABCDEFGHIJKL"
        if kind == "AWS::IAM::ManagedPolicy":
            return f"arn:aws:iam::{ACCOUNT}:policy/{name[:128]}"
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name[:80]}"
        if kind == "AWS::SecretsManager::Secret":
            return f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{logical}-ABCDEFGHIJKL-AbCdEf"
        if kind == "AWS::Lambda::LayerVersion":
            return f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:{logical}:1"
        if kind == "AWS::S3::Bucket":
            return name.lower()[:63]
        return name[:64]

    def attribute(self, logical: str, attr: str) -> str:
        kind = self.template["Resources"][logical]["Type"]
        name = self.physical(logical)
        if kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{ACCOUNT}:role/{name}"
        if kind == "AWS::DynamoDB::Table":
            arn = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
            return f"{arn}/stream/2026-01-01T00:00:00.000" if attr == "StreamArn" else arn
        if kind == "AWS::SQS::Queue":
            return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name.rsplit('/', 1)[-1]}"
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{name}"
        if kind == "AWS::OpenSearchServerless::Collection":
            return (f"arn:aws:aoss:{REGION}:{ACCOUNT}:collection/abcdefghij0123456789" if attr == "Arn"
                    else f"https://abcdefghij0123456789.{REGION}.aoss.amazonaws.com")
        if kind == "AWS::Lambda::Function":
            return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        if kind == "AWS::Logs::LogGroup":
            return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{name}:*"
        if kind in ("AWS::CloudFormation::CustomResource", "Custom::SearchIndexSetup"):
            return f"agent-memory-{self.values['TenantId']}"
        return f"arn:aws:{kind.split('::')[1].lower()}:{REGION}:{ACCOUNT}:{attr.lower()}/{name}"

    def ref(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        return self.physical(name)

    def get_att(self, logical: str, attr: str) -> str:
        return self.attribute(logical, attr)


def policy_chars(document: Any) -> int:
    """A policy's size as IAM counts it: its JSON without whitespace."""
    return len(re.sub(r"\s", "", json.dumps(document, separators=(",", ":"))))


# --- checks on one resolved configuration ---------------------------------------------------

def check_stack(stack: Resolved, label: str) -> list[Finding]:
    return [Finding("stack-resources", len(stack.resources()), label),
            Finding("stack-outputs", len(stack.outputs()), label),
            Finding("stack-parameters", len(stack.template.get("Parameters", {})), label)]


def check_roles(stack: Resolved, label: str) -> list[Finding]:
    found = []
    for name, res in stack.resources().items():
        if res["Type"] != "AWS::IAM::Role":
            continue
        props = stack.resolve(res.get("Properties", {}))
        arns = props.get("ManagedPolicyArns", [])
        found.append(Finding("managed-policies-per-role", len(arns), f"{label}: {name}"))
        inline = sum(policy_chars(p["PolicyDocument"]) for p in props.get("Policies", []))
        found.append(Finding("role-inline-policy-chars", inline, f"{label}: {name}"))
    return found


def check_managed_policies(stack: Resolved, label: str) -> list[Finding]:
    return [Finding("managed-policy-chars", policy_chars(stack.resolve(res["Properties"]["PolicyDocument"])),
                    f"{label}: {name}")
            for name, res in stack.resources().items() if res["Type"] == "AWS::IAM::ManagedPolicy"]


def check_functions(stack: Resolved, label: str) -> list[Finding]:
    found, reserved = [], 0
    for name, res in stack.resources().items():
        if res["Type"] != "AWS::Lambda::Function":
            continue
        props = stack.resolve(res.get("Properties", {}))
        env = props.get("Environment", {}).get("Variables", {})
        # Lambda counts the keys and values of the variables' map
        found.append(Finding("env-var-bytes", sum(len(k.encode()) + len(str(v).encode()) for k, v in env.items()),
                             f"{label}: {name}"))
        found.append(Finding("layers-per-function", len(props.get("Layers", [])), f"{label}: {name}"))
        reserved += int(props.get("ReservedConcurrentExecutions", 0) or 0)
    found.append(Finding("reserved-concurrency", reserved, label))
    return found


def check_http_api(stack: Resolved, label: str) -> list[Finding]:
    found = []
    for name, res in stack.resources().items():
        if res["Type"] != "AWS::ApiGatewayV2::Api":
            continue
        body = res.get("Properties", {}).get("Body", {})
        routes = sum(1 for item in body.get("paths", {}).values() for method in item
                     if method.lower() in ("get", "put", "post", "delete", "patch", "head", "options",
                                           "x-amazon-apigateway-any-method"))
        found.append(Finding("http-api-routes", routes, f"{label}: {name}"))
    return found


def check_search_names(stack: Resolved, label: str) -> list[Finding]:
    found = []
    for name, res in stack.resources().items():
        if not res["Type"].startswith("AWS::OpenSearchServerless::"):
            continue
        props = stack.resolve(res.get("Properties", {}))
        found.append(Finding("aoss-name-chars", len(props["Name"]), f"{label}: {name}"))
        if "Policy" in props:
            found.append(Finding("aoss-policy-chars", len(props["Policy"]), f"{label}: {name}"))
    return found


CHECKS = (check_stack, check_roles, check_managed_policies, check_functions, check_http_api, check_search_names)


def check_template(translated: dict[str, Any], parameters: dict[str, str], label: str) -> list[Finding]:
    stack = Resolved(translated, parameters)
    return [f for check in CHECKS for f in check(stack, label)]


def check_template_body(path: Path) -> list[Finding]:
    found = [Finding("template-body-bytes", path.stat().st_size, path.name)]
    openapi = path.parent / "openapi.yaml"
    if openapi.exists():  # AWS::Include reads it from S3 as a template snippet of its own
        found.append(Finding("template-body-bytes", openapi.stat().st_size, openapi.name))
    return found


def check_built_artifacts(build_dir: Path) -> list[Finding]:
    """Each built function's folder plus the layer it runs with, unzipped (what Lambda's
    250 MB counts). Every function runs with one layer per architecture; the larger counts."""
    def size(folder: Path) -> int:
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())

    layers = [d for d in build_dir.iterdir() if d.is_dir() and d.name.startswith("DependenciesLayer")]
    largest = max((size(d) for d in layers), default=0)
    found = []
    for folder in sorted(build_dir.iterdir()):
        if folder.is_dir() and folder not in layers and (folder / "app.py").exists():
            found.append(Finding("unzipped-bytes", size(folder) + largest, f"built: {folder.name} + layer"))
    return found


# --- operations: who hears the alarms, what outlives the stack --------------------------------

CFN_DELETION_POLICY = ("https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
                       "aws-attribute-deletionpolicy.html")
SNS_EMAIL = "https://docs.aws.amazon.com/sns/latest/dg/sns-email-notifications.html"
# What a stack delete (or a replacement) must leave in place: the memory itself, the originals
# of its documents and the dead letters still to be repaired. The search collection is a
# projection of the table (`agent-memory reindex --rebuild` refills it) and costs its OCU floor
# while it exists: it goes with the stack, said explicitly (docs/opensearch.md, "Deleting a stack").
RETAINED = ("MemoryTable", "UploadBucket", "ProjectorDeadLetterQueue", "IngestionDeadLetterQueue")
DELETED = ("SearchCollection",)
# Domains reserved for documentation (RFC 2606): mail to them reaches no one.
PLACEHOLDER_DOMAIN = re.compile(r"@([^@]+\.)?(example\.(com|net|org)|[^@]*\.example|[^@]*\.invalid|[^@]*\.test)$")


def check_retention(template: dict[str, Any]) -> list[str]:
    """What the docs say outlives a stack delete does (DeletionPolicy and UpdateReplacePolicy
    Retain), and the collection's deletion is a stated choice, not CloudFormation's default."""
    resources = template["Resources"]
    problems = []
    for name in RETAINED:
        res = resources.get(name, {})
        # RetainExceptOnCreate: kept like Retain, except that a first deploy that rolls back
        # deletes what it made (nothing is in it yet), so a failed deploy orphans nothing.
        for attribute, allowed in (("DeletionPolicy", ("Retain", "RetainExceptOnCreate")),
                                   ("UpdateReplacePolicy", ("Retain",))):
            if res.get(attribute) not in allowed:
                problems.append(f"{name}: {attribute} is {res.get(attribute)!r}, not {' or '.join(allowed)} "
                                f"({CFN_DELETION_POLICY})")
    for name in DELETED:
        if name in resources and resources[name].get("DeletionPolicy") != "Delete":
            problems.append(f"{name}: DeletionPolicy is {resources[name].get('DeletionPolicy')!r}, not the documented "
                            "Delete")
    return problems


def _overrides(text: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)="([^"]*)"', text))


def alarm_destinations(samconfig: dict[str, Any]) -> dict[str, str]:
    """Each config-env's alarm destination (its AlarmEmail, else AlarmTopicArn; "" for none)."""
    out = {}
    for env, section in samconfig.items():
        if env == "version" or not isinstance(section, dict):
            continue
        given = _overrides(((section.get("deploy") or {}).get("parameters") or {}).get("parameter_overrides", ""))
        out[env] = given.get("AlarmEmail") or given.get("AlarmTopicArn") or ""
    return out


def check_alarm_destinations(samconfig: dict[str, Any], strict_env: str | None = None) -> tuple[list[str], list[str]]:
    """(problems, warnings): a config-env whose alarms would notify no one is a problem; one
    that mails a reserved example domain is a warning, and a problem for ``strict_env`` (the env
    about to be deployed: `make preflight CONFIG_ENV=<env>`)."""
    problems, warnings = [], []
    for env, destination in alarm_destinations(samconfig).items():
        if strict_env is not None and env != strict_env:
            continue
        if not destination:
            problems.append(f"samconfig.toml [{env}]: neither AlarmEmail nor AlarmTopicArn is set, so the stack's "
                            "alarms would notify no one")
        elif PLACEHOLDER_DOMAIN.search(destination):
            (problems if env == strict_env else warnings).append(
                f"samconfig.toml [{env}]: AlarmEmail {destination} is a placeholder (a reserved domain: mail to it "
                f"reaches no one); set your on-call address or AlarmTopicArn before deploying ({SNS_EMAIL})")
    if strict_env is not None and strict_env not in alarm_destinations(samconfig):
        problems.append(f"samconfig.toml has no [{strict_env}] config-env")
    return problems, warnings


# --- report ---------------------------------------------------------------------------------

def worst(findings: list[Finding]) -> dict[str, Finding]:
    out: dict[str, Finding] = {}
    for f in findings:
        if f.quota not in out or f.value > out[f.quota].value:
            out[f.quota] = f
    return out


# Account-wide quotas a stack draws on: how many tenant stacks one account holds at the default.
ACCOUNT_QUOTAS = (("IAM roles per account", 1_000, "AWS::IAM::Role", IAM_QUOTAS),
                  ("IAM customer managed policies per account", 1_500, "AWS::IAM::ManagedPolicy", IAM_QUOTAS),
                  ("OpenSearch Serverless collections per account and region", 50,
                   "AWS::OpenSearchServerless::Collection", AOSS_QUOTAS))
# Counted per stack, compared with nothing: the account's quota on Serverless policies is in
# Service Quotas (aoss), not checked here.
COUNTED_ONLY = (("OpenSearch Serverless security and data access policies", ("AWS::OpenSearchServerless::SecurityPolicy",
                 "AWS::OpenSearchServerless::AccessPolicy"), AOSS_QUOTAS),)


def check_account_concurrency(translated: dict[str, Any], parameters: dict[str, str], label: str) -> list[Finding]:
    """The stack's own reservation (the streaming function's ``StreamReservedConcurrency``) times
    the tenant stacks the account-wide quotas let one account hold: every reservation lowers the
    unreserved pool, which AWS keeps at 100 or more. Not for ``ReservedConcurrency``, an opt-in that
    lowers the tenants per account instead (docs/deploying.md, "Tenants per account")."""
    if parameters.get("ReservedConcurrency"):
        return []
    kinds = count_kinds(translated, parameters)
    stacks = min(limit // kinds[kind] for _, limit, kind, _ in ACCOUNT_QUOTAS if kinds.get(kind))
    stack = Resolved(translated, parameters)
    reserved = sum(int(stack.resolve(r.get("Properties", {})).get("ReservedConcurrentExecutions", 0) or 0)
                   for r in stack.resources().values() if r["Type"] == "AWS::Lambda::Function")
    return [Finding("reserved-concurrency-per-account", reserved * stacks,
                    f"{label}: {reserved} per stack x {stacks} stacks")]


def stacks_per_account(largest: dict[str, int]) -> list[str]:
    lines = []
    for what, limit, kind, source in ACCOUNT_QUOTAS:
        per_stack = largest.get(kind, 0)
        allowed = f"{limit // per_stack:,} stacks" if per_stack else "no bound"
        lines.append(f"| {what} | {limit:,} | {per_stack} | {allowed} | {source} |")
    for what, kinds, source in COUNTED_ONLY:
        per_stack = sum(largest.get(k, 0) for k in kinds)
        lines.append(f"| {what} | Service Quotas (aoss), not checked | {per_stack} | - | {source} |")
    return lines


def count_kinds(translated: dict[str, Any], parameters: dict[str, str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for res in Resolved(translated, parameters).resources().values():
        counts[res["Type"]] = counts.get(res["Type"], 0) + 1
    return counts


def report(findings: list[Finding]) -> tuple[str, bool]:
    top = worst(findings)
    lines = ["| quota | AWS limit | largest here | where | result | source |", "|---|---|---|---|---|---|"]
    for key, quota in QUOTAS.items():
        f = top.get(key)
        if f is None:
            why = "needs a build (--build-dir)" if key == "unzipped-bytes" else "none in the stack"
            lines.append(f"| {quota.what} | {quota.limit:,} | - | {why} | {'skipped' if key == 'unzipped-bytes' else 'ok'}"
                         f" | {quota.source} |")
            continue
        lines.append(f"| {quota.what} | {quota.limit:,} | {f.value:,} | {f.where} | "
                     f"{'ok' if f.ok else 'FAIL'} | {quota.source} |")
    failures = [f for f in findings if not f.ok]
    if failures:
        lines.append("")
        lines.append(f"{len(failures)} over quota:")
        lines += [f"  {f.quota}: {f.value:,} > {QUOTAS[f.quota].limit:,} ({f.where})" for f in failures]
    return "\n".join(lines), not failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", type=Path, default=REPO / "template.yaml")
    parser.add_argument("--build-dir", type=Path, help="measure what `sam build` made here too")
    parser.add_argument("--samconfig", type=Path, default=REPO / "samconfig.toml")
    parser.add_argument("--config-env", help="the config-env about to be deployed: its alarms must reach someone")
    args = parser.parse_args(argv)
    started = time.monotonic()
    source = sam_input(args.template)
    findings = check_template_body(args.template)
    largest: dict[str, int] = {}
    figures_differ: list[str] = []
    for label, params in CONFIGURATIONS.items():
        translated = translate(source, params)
        if label == "defaults":  # the docs' figures, from the template as SAM expands it
            import stack_figures

            figures_differ = stack_figures.differences(stack_figures.blocks(translated))
        findings += check_template(translated, params, label)
        findings += check_account_concurrency(translated, params, label)
        for kind, n in count_kinds(translated, params).items():
            largest[kind] = max(largest.get(kind, 0), n)
    if args.build_dir is not None:
        findings += check_built_artifacts(args.build_dir)
    text, ok = report(findings)
    import tomllib

    operations, warnings = check_alarm_destinations(tomllib.loads(args.samconfig.read_text()), args.config_env)
    operations += check_retention(load_template(args.template))
    if operations or warnings:
        text += "\n\n" + "\n".join([f"FAIL {p}" for p in operations] + [f"WARNING {w}" for w in warnings])
    ok = ok and not operations
    if figures_differ:
        text += "\n\nthe docs' figures differ (python tests/deploy/stack_figures.py --write):\n  " + \
            "\n  ".join(figures_differ)
        ok = False
    print(text)
    print("\n| account quota (default) | limit | per stack, largest configuration | tenant stacks it allows | source |")
    print("|---|---|---|---|---|")
    print("\n".join(stacks_per_account(largest)))
    print(f"\n{len(CONFIGURATIONS)} parameter sets translated and checked in {time.monotonic() - started:.1f} s: "
          f"{'preflight passed' if ok else 'preflight FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
