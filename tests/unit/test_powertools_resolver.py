"""The HTTP layer imports Powertools' API Gateway resolver without the event handler package's
other resolvers (issue 30: AppSync's pulls in asyncio), and the package still answers every
name it exports when something asks for one; so does the event data classes package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"

PROBE = """
import json, sys
import agent_memory.http.api as api
others = ("appsync", "bedrock_agent", "events_appsync", "vpc_lattice", "lambda_function_url", "http_resolver")
loaded = [m for m in others if f"aws_lambda_powertools.event_handler.{m}" in sys.modules]
events = sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("aws_lambda_powertools.utilities.data_classes."))
resolver_ok = api.make_resolver() is not None
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, AppSyncResolver, content_types
from aws_lambda_powertools.utilities.data_classes import SQSEvent, event_source
import aws_lambda_powertools.utilities.data_classes.sqs_event as sqs
import aws_lambda_powertools.event_handler.api_gateway as gw
print(json.dumps({"loaded": loaded, "events": events, "resolver": resolver_ok,
                  "sqs": SQSEvent is sqs.SQSEvent, "event_source": callable(event_source),
                  "same_class": APIGatewayHttpResolver is gw.APIGatewayHttpResolver is api.APIGatewayHttpResolver,
                  "appsync": AppSyncResolver.__module__, "content_types": content_types.__name__}))
"""


def test_only_the_api_gateway_resolver_loads_and_the_package_still_exports_everything():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SHARED), "PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    # the API Gateway resolver's own event classes, not every event source's
    assert "sqs_event" not in doc.pop("events") and "code_pipeline_job_event" not in out.stdout
    assert doc == {"loaded": [], "resolver": True, "same_class": True, "sqs": True, "event_source": True,
                   "appsync": "aws_lambda_powertools.event_handler.appsync",
                   "content_types": "aws_lambda_powertools.event_handler.content_types"}
