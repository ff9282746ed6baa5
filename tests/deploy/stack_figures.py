"""The stack's figures in the docs, computed: roles and policies per role, alarms and their
metrics, the fixed monthly cost of a tenant stack and how many fit an account.

``python tests/deploy/stack_figures.py`` prints them; ``--write`` rewrites the blocks of
README.md and docs/deploying.md between ``<!-- figures:NAME -->`` and ``<!-- /figures -->``.
tests/deploy/test_stack_figures.py fails when a block differs from what this computes, and
``make preflight`` checks the same on the template as SAM's translator expands it (run with the
tools venv's Python, this script translates too; without samtranslator it reads template.yaml,
whose functions all name their role, so SAM adds no role, alarm or secret to what it counts).

Prices: one table (``PRICES``), us-east-1 list prices on demand, each with its page, the date it
was put in the table and how it was checked. A tenant stack's own charges only: free tiers are per account and shared by every
tenant in it, so none is subtracted.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import iam_table  # noqa: E402
import preflight  # noqa: E402

REPO = preflight.REPO
DOCS = {"README.md": REPO / "README.md", "docs/deploying.md": REPO / "docs" / "deploying.md"}


@dataclass(frozen=True)
class Price:
    usd: float
    unit: str
    source: str
    read: str  # the date the price was put in this table
    checked: str = ("carried over from docs/deploying.md and docs/opensearch.md as they stood on 2026-12-04; "
                    "not re-read from the page (no network where the table was made): re-read before relying on it")


PRICES = {
    "secret": Price(0.40, "per secret-month", "https://aws.amazon.com/secrets-manager/pricing/", "2026-12-04"),
    "alarm_metric": Price(0.10, "per standard-resolution alarm metric-month",
                          "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"),
    "custom_metric": Price(0.30, "per custom metric-month (first 10,000)",
                           "https://aws.amazon.com/cloudwatch/pricing/", "2026-12-04"),
    "sqs_request": Price(0.40 / 1e6, "per standard queue request", "https://aws.amazon.com/sqs/pricing/",
                         "2026-12-04"),
    "lambda_request": Price(0.20 / 1e6, "per invocation", "https://aws.amazon.com/lambda/pricing/", "2026-12-04"),
    "lambda_gb_s": Price(0.0000166667, "per GB-second, x86_64", "https://aws.amazon.com/lambda/pricing/",
                         "2026-12-04"),
    "xray_trace": Price(5.00 / 1e6, "per trace recorded", "https://aws.amazon.com/xray/pricing/", "2026-12-04"),
    "ocu_hour": Price(0.24, "per OCU-hour (OpenSearch Serverless)",
                      "https://aws.amazon.com/opensearch-service/pricing/", "2026-12-04"),
}
HOURS = 730  # AWS's month
MINUTES = HOURS * 60
# Lambda polls an SQS event source with 5 pollers at first, each a 20-second long poll: 3 receives a minute.
SQS_POLLERS, RECEIVES_PER_MINUTE = 5, 3
REDRIVE_EVERY_MINUTES = 5  # ProjectionRedriveSchedule
REDRIVE_MS = 200  # an idle redrive: one empty receive of the dead-letter queue
REDRIVE_METRICS = ("ProjectionRedriven", "ProjectionReindexDue")  # published on every redrive, zero or not

CONFIGS = {"without search": {}, "with search": {"SearchBackend": "collection"}}


def usd(value: float) -> str:
    return f"${value:,.2f}"


@dataclass
class Figures:
    roles: int
    managed_per_role: int
    inline_per_role: int
    largest_inline: int
    largest_inline_role: str
    alarms: int
    alarm_metrics: int
    secrets: int
    polls_queue: int  # SQS queues Lambda polls (an event source each)
    redrive: bool
    memory_mb: int
    functions: int = 0
    reserved: int = 0  # reserved concurrency of the stack at these parameters (the streaming function's)

    def costs(self) -> dict[str, float]:
        p = PRICES
        out = {"secrets": self.secrets * p["secret"].usd, "alarms": self.alarm_metrics * p["alarm_metric"].usd}
        if self.polls_queue:
            out["queue polling"] = self.polls_queue * SQS_POLLERS * RECEIVES_PER_MINUTE * MINUTES * p["sqs_request"].usd
        if self.redrive:
            runs = MINUTES / REDRIVE_EVERY_MINUTES
            out["redrive"] = (len(REDRIVE_METRICS) * p["custom_metric"].usd + runs * p["lambda_request"].usd
                              + runs * REDRIVE_MS / 1000 * self.memory_mb / 1024 * p["lambda_gb_s"].usd
                              + runs * p["sqs_request"].usd + runs * p["xray_trace"].usd)
        return out

    @property
    def fixed(self) -> float:
        return sum(self.costs().values())


def figures(template: dict[str, Any], parameters: dict[str, str]) -> Figures:
    stack = preflight.Resolved(template, parameters)
    resources = stack.resources()
    roles = {n: stack.resolve(r["Properties"]) for n, r in resources.items() if r["Type"] == "AWS::IAM::Role"}
    managed = max(len(r.get("ManagedPolicyArns", [])) for r in roles.values())
    inline = max(len(r.get("Policies", [])) for r in roles.values())
    size, largest = max((sum(preflight.policy_chars(p["PolicyDocument"]) for p in r.get("Policies", [])), n)
                        for n, r in roles.items())
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    metrics = sum(1 if "MetricName" in a else sum(1 for q in a["Metrics"] if "MetricStat" in q) for a in alarms)
    functions = [r for r in resources.values() if r["Type"] in ("AWS::Serverless::Function", "AWS::Lambda::Function")]
    polls = sum(1 for f in functions for e in (f["Properties"].get("Events") or {}).values() if e.get("Type") == "SQS") \
        + sum(1 for r in resources.values() if r["Type"] == "AWS::Lambda::EventSourceMapping"
              and ":sqs:" in str(stack.resolve(r["Properties"].get("EventSourceArn"))))
    schedule = resources.get("ProjectionRedriveSchedule")
    redrive = schedule is not None and stack.resolve(schedule["Properties"]["State"]) == "ENABLED"
    globals_ = template.get("Globals", {}).get("Function", {})
    memory = int(resources["ProjectorFunction"]["Properties"].get("MemorySize", globals_.get("MemorySize", 512)))
    return Figures(roles=len(roles), managed_per_role=managed, inline_per_role=inline, largest_inline=size,
                   largest_inline_role=largest, alarms=len(alarms), alarm_metrics=metrics,
                   secrets=sum(1 for r in resources.values() if r["Type"] == "AWS::SecretsManager::Secret"),
                   polls_queue=polls, redrive=redrive, memory_mb=memory, functions=len(functions),
                   reserved=sum(int(stack.resolve(f["Properties"]).get("ReservedConcurrentExecutions") or 0)
                                for f in functions))


def largest_inline(template: dict[str, Any]) -> tuple[int, str, str]:
    """The largest role policy over every parameter set the preflight checks."""
    best = (0, "", "")
    for label, params in preflight.CONFIGURATIONS.items():
        f = figures(template, params)
        best = max(best, (f.largest_inline, f.largest_inline_role, label))
    return best


def compute(template: dict[str, Any] | None = None) -> dict[str, Figures]:
    template = template if template is not None else source_template()
    return {label: figures(template, params) for label, params in CONFIGS.items()}


def source_template() -> dict[str, Any]:
    return preflight.sam_input()


# --- the docs' blocks ------------------------------------------------------------------------

def _queues(f: Figures) -> str:
    return "ingestion queue" if f.polls_queue == 1 else f"{f.polls_queue} queues (ingestion, export and import jobs)"


def _fixed_line(f: Figures) -> str:
    c = f.costs()
    parts = [f"two secrets {usd(c['secrets'])}" if f.secrets == 2 else f"{f.secrets} secrets {usd(c['secrets'])}",
             f"{f.alarms} alarms over {f.alarm_metrics} alarm metrics {usd(c['alarms'])}"]
    if "queue polling" in c:
        parts.append(f"{_queues(f)} polling {usd(c['queue polling'])}")
    if "redrive" in c:
        parts.append(f"the projector's 5-minute redrive {usd(c['redrive'])}")
    return ", ".join(parts)


def block_idle_cost(figs: dict[str, Figures]) -> str:
    on, off = figs["with search"], figs["without search"]
    floor = 2 * HOURS * PRICES["ocu_hour"].usd
    lines = ["| idle cost, per month (US East, on demand) | |", "|---|---|",
             f"| per tenant stack, fixed | about {usd(on.fixed)} with search: {_fixed_line(on)}; "
             f"{usd(off.fixed)} without search |",
             "| per tenant, by data | DynamoDB $0.25 per GB (+ $0.20 point-in-time recovery), search index $0.024 per GB |",
             f"| shared floor, once per account and region | OpenSearch Serverless OCUs: {usd(floor)} with standby "
             f"replicas (2 OCUs), {usd(floor / 2)} without (1 OCU, dev) |",
             "| 1 / 10 / 50 tenants in one account, standby on | "
             + " / ".join(usd(floor + n * on.fixed) for n in (1, 10, 50)) + " |"]
    return "\n".join(lines)


def block_costs_idle(figs: dict[str, Figures]) -> str:
    on, off = figs["with search"], figs["without search"]
    c = on.costs()
    floor = 2 * HOURS * PRICES["ocu_hour"].usd
    runs = MINUTES // REDRIVE_EVERY_MINUTES
    return "\n".join([
        "Per month, on demand, US East (N. Virginia), with no free tier (free tiers are per account and",
        f"shared by its tenants). Fixed per tenant stack: {on.secrets} secrets ({usd(PRICES['secret'].usd)} each, "
        f"{usd(c['secrets'])}), the {on.alarms} CloudWatch",
        f"alarms ({usd(PRICES['alarm_metric'].usd)} per alarm metric: {on.alarm_metrics} metrics, {usd(c['alarms'])}), "
        f"the long polling by Lambda of the {_queues(on)}",
        f"({SQS_POLLERS} pollers x {RECEIVES_PER_MINUTE} receives a minute each, about "
        f"{on.polls_queue * SQS_POLLERS * RECEIVES_PER_MINUTE * MINUTES:,} requests, {usd(c['queue polling'])}) and, "
        "with search, the",
        f"projector's redrive every {REDRIVE_EVERY_MINUTES} minutes ({runs:,} runs: its {len(REDRIVE_METRICS)} "
        f"custom metrics, invocations, dead-letter receives",
        f"and traces, {usd(c['redrive'])}): **about {usd(on.fixed)} with search, {usd(off.fixed)} without**. "
        "Lambda, API Gateway and DynamoDB on",
        "demand cost nothing idle beyond stored data (DynamoDB $0.25 per GB-month, point-in-time recovery",
        "$0.20; the index $0.024 per GB-month). The **shared floor** is OpenSearch Serverless's minimum",
        "capacity, paid once per account and region by the collections sharing a key and standby",
        f"setting: 2 OCUs with standby replicas, {usd(floor)}; 1 OCU without, {usd(floor / 2)}. Prices, their "
        "pages, their date",
        "and how each was checked: `PRICES` in `tests/deploy/stack_figures.py` (these figures come from it).",
    ])


def block_iam(figs: dict[str, Figures], template: dict[str, Any]) -> str:
    on, off = figs["with search"], figs["without search"]
    size, role, label = largest_inline(template)
    lines = [
        f"Each function has its own role (the streaming chat function the chat function's): {on.roles} roles per "
        f"stack with search, {off.roles} without. Each role holds "
        f"{on.inline_per_role} inline",
        f"policy and {on.managed_per_role} managed policies (AWS allows 10); the largest policy is {role}'s, "
        f"{size:,} characters of the",
        f"10,240 a role's inline policies may hold ({label}). The roles, from the table in",
        "`tests/deploy/iam_table.py` (Logs and Traces are in every role):",
        "",
        "| role | grants |", "|---|---|",
    ]
    for function in iam_table.FUNCTIONS:
        grants = [g for g in iam_table.grants_of(function) if g not in iam_table.EVERY]
        lines.append(f"| `{iam_table.role_name(function)}` | {', '.join(grants)} |")
    lines += ["", "| grant | what it is for |", "|---|---|"]
    for name, grant in iam_table.GRANTS.items():
        cond = f" (with `{grant.condition}`)" if grant.condition else ""
        lines.append(f"| {name}{cond} | {grant.why} |")
    lines += ["", "Grants on `*`, each because AWS offers no narrower resource:", ""]
    lines += [f"- `{sid}`: {why}" for sid, why in iam_table.STAR_GRANTS.items()]
    return "\n".join(lines)


def block_tenants(figs: dict[str, Figures]) -> str:
    on = figs["with search"]
    return "\n".join([
        "| quota | default | per tenant stack | tenants at the default |",
        "| --- | --- | --- | --- |",
        f"| IAM roles per account | 1,000 (up to 5,000) | {on.roles} | {1000 // on.roles} ({5000 // on.roles} raised) |",
        "| IAM customer-managed policies per account | 1,500 (up to 5,000) | 0 (each role's policy is inline) | no bound |",
        f"| managed policies per role | 10 (raisable) | {on.managed_per_role} (one inline policy per role) | "
        "a per-role limit, not per tenant |",
        f"| Lambda concurrent executions per region | 1,000, shared by every function in the account (100 must stay "
        f"unreserved) | {on.reserved} reserved by the streaming chat function (`StreamReservedConcurrency`); the other "
        f"{on.functions - 1} unreserved unless `ReservedConcurrency` reserves it for each | {900 // on.reserved} "
        f"({1000 // on.roles} x {on.reserved} = {1000 // on.roles * on.reserved} reserved leaves "
        f"{1000 - 1000 // on.roles * on.reserved} unreserved); `ReservedConcurrency=10` "
        f"({10 * (on.functions - 1) + on.reserved} per stack): {900 // (10 * (on.functions - 1) + on.reserved)} |",
        "| document ingestion in flight | | 10 jobs (`MaximumConcurrency`), each with `limits.document_concurrency` "
        "model calls | |",
        "| OpenSearch Serverless collections per account and region | 50 | 1 (`collection` mode) | 50; use `shared` "
        "beyond |",
        "| OpenSearch Serverless OCUs | account maximum search and indexing capacity (default 10 each, raisable) | "
        "shared by collections on one key and standby setting | capacity, not a count, bounds it |",
        "| Bedrock tokens and requests per minute, per model and region | account-wide | every tenant stack in the "
        "account draws on the same quota | |",
        "",
        f"So at the defaults about {1000 // on.roles} tenants fit an account (IAM roles bind first), 50 with a "
        "collection each;",
        "Bedrock throughput is shared by all of them.",
    ])


def blocks(template: dict[str, Any] | None = None) -> dict[str, str]:
    template = template if template is not None else source_template()
    figs = compute(template)
    return {"idle-cost": block_idle_cost(figs), "costs-idle": block_costs_idle(figs),
            "iam": block_iam(figs, template), "tenants": block_tenants(figs)}


WHERE = {"idle-cost": "README.md", "costs-idle": "docs/deploying.md", "iam": "docs/deploying.md",
         "tenants": "docs/deploying.md"}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- figures:{name} -->\n)(.*?)(\n<!-- /figures -->)", re.S)


def differences(rendered: dict[str, str]) -> list[str]:
    out = []
    for name, text in rendered.items():
        doc = DOCS[WHERE[name]].read_text()
        m = _pattern(name).search(doc)
        if m is None:
            out.append(f"{WHERE[name]}: no <!-- figures:{name} --> block")
        elif m.group(2) != text:
            out.append(f"{WHERE[name]}: the {name} block differs from tests/deploy/stack_figures.py's figures")
    return out


def write(rendered: dict[str, str]) -> None:
    for name, text in rendered.items():
        path = DOCS[WHERE[name]]
        doc = path.read_text()
        new, n = _pattern(name).subn(lambda m, text=text: m.group(1) + text + m.group(3), doc)
        if n != 1:
            raise SystemExit(f"{WHERE[name]}: expected one <!-- figures:{name} --> block, found {n}")
        path.write_text(new)


def translated_or_source() -> dict[str, Any]:
    try:
        import samtranslator  # noqa: F401
    except ImportError:
        return source_template()
    return preflight.translate(source_template(), {})


def main(argv: list[str]) -> int:
    template = translated_or_source()
    rendered = blocks(template)
    if argv == ["--write"]:
        write(rendered)
        return 0
    for name, text in rendered.items():
        print(f"<!-- figures:{name} ({WHERE[name]}) -->\n{text}\n")
    for label, f in compute(template).items():
        print(f"{label}: {f} fixed {usd(f.fixed)} {({k: round(v, 4) for k, v in f.costs().items()})}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
