"""What a tenant deploy needs from template.yaml and samconfig.toml, checked without AWS:
every config-env supplies every required parameter, every taggable resource carries the
tenant, the data is protected from deletion, and the limits are parameters."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import iam_table
import pytest

from agent_memory.cfn_template import load_template

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = load_template(REPO / "template.yaml")
SAMCONFIG = tomllib.loads((REPO / "samconfig.toml").read_text())
RESOURCES = TEMPLATE["Resources"]
# Types that cannot carry tags in CloudFormation.
# Types CloudFormation gives no Tags property (an OpenSearch Serverless access policy is not taggable).
UNTAGGABLE = {"AWS::IAM::ManagedPolicy", "AWS::Serverless::LayerVersion", "AWS::OpenSearchServerless::AccessPolicy",
              "AWS::OpenSearchServerless::SecurityPolicy", "AWS::S3::BucketPolicy", "AWS::CloudFormation::CustomResource",
              "AWS::Lambda::Permission", "AWS::Logs::SubscriptionFilter"}


def parameter_overrides(text: str) -> dict[str, str]:
    return {k: v for k, v in re.findall(r'(\w+)="([^"]*)"', text)}


def config_envs() -> list[str]:
    return sorted(SAMCONFIG.keys() - {"version"})


def test_there_is_a_default_and_an_example_tenant():
    assert "default" in config_envs() and len(config_envs()) >= 2


@pytest.mark.parametrize("env", config_envs())
def test_each_config_env_supplies_every_required_parameter(env):
    section = SAMCONFIG[env]
    deploy = section["deploy"]["parameters"]
    assert section["global"]["parameters"]["stack_name"]
    assert deploy["region"] and deploy.get("resolve_s3") is True
    assert "CAPABILITY_IAM" in deploy["capabilities"]
    given = parameter_overrides(deploy["parameter_overrides"])
    required = {name for name, p in TEMPLATE["Parameters"].items() if "Default" not in p}
    assert required - set(given) == set()
    assert set(given) <= set(TEMPLATE["Parameters"]), "overrides a parameter the template does not have"
    for name, value in given.items():
        spec = TEMPLATE["Parameters"][name]
        if "AllowedPattern" in spec:
            assert re.fullmatch(spec["AllowedPattern"], value), (name, value)
        if "AllowedValues" in spec:
            assert value in [str(v) for v in spec["AllowedValues"]], (name, value)
    assert parameter_overrides(deploy["tags"]) == {"tenant": given["TenantId"]}


def test_no_parameter_needs_a_pre_made_secret():
    assert not [n for n, p in TEMPLATE["Parameters"].items() if "Default" not in p and n != "TenantId"]
    for name in ("CursorSecret", "BootstrapKeySecret"):
        assert RESOURCES[name]["Type"] == "AWS::SecretsManager::Secret"
        assert "GenerateSecretString" in RESOURCES[name]["Properties"]


def _tenant_tag(props: dict) -> object:
    tags = props.get("Tags")
    if isinstance(tags, dict):
        return tags.get("tenant")
    return next((t["Value"] for t in tags or [] if t["Key"] == "tenant"), None)


def test_every_taggable_resource_is_tagged_with_the_tenant():
    function_globals = TEMPLATE["Globals"]["Function"]
    assert _tenant_tag(function_globals) == {"Ref": "TenantId"} and function_globals["PropagateTags"] is True
    for name, res in RESOURCES.items():
        if res["Type"] in UNTAGGABLE or res["Type"] == "AWS::Serverless::Function":
            continue
        assert _tenant_tag(res.get("Properties", {})) == {"Ref": "TenantId"}, f"{name} has no tenant tag"


def test_the_data_and_the_dead_letters_outlive_the_stack():
    table = RESOURCES["MemoryTable"]
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"
    # kept past the stack; a first deploy that rolls back removes them (they hold nothing yet)
    assert RESOURCES["ProjectorDeadLetterQueue"]["DeletionPolicy"] == "RetainExceptOnCreate"
    assert RESOURCES["IngestionDeadLetterQueue"]["DeletionPolicy"] == "RetainExceptOnCreate"


def test_document_ingestion_is_a_bounded_sqs_worker_with_partial_failures_and_a_dead_letter_queue():
    worker = RESOURCES["IngestionFunction"]["Properties"]
    source = worker["Events"]["IngestionJobs"]["Properties"]
    assert source["Queue"] == {"Fn::GetAtt": ["IngestionQueue", "Arn"]}
    assert source["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert source["ScalingConfig"]["MaximumConcurrency"] >= 2 and source["BatchSize"] == 1
    queue = RESOURCES["IngestionQueue"]["Properties"]
    # AWS: a Lambda event source's visibility timeout is at least six times the function's timeout.
    assert queue["VisibilityTimeout"] >= 6 * worker["Timeout"] and queue["SqsManagedSseEnabled"] is True
    assert queue["RedrivePolicy"]["maxReceiveCount"] >= 3
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["IngestionDeadLetterQueue", "Arn"]}
    documents = RESOURCES["DocumentsFunction"]["Properties"]
    assert documents["Environment"]["Variables"]["AGENT_MEMORY_INGESTION_QUEUE_URL"] == {"Ref": "IngestionQueue"}
    assert "IngestionQueueSend" in iam_table.FUNCTIONS["DocumentsFunction"]
    assert documents["Role"] == {"Fn::GetAtt": ["DocumentsFunctionRole", "Arn"]}


def test_limits_are_parameters_and_reserved_concurrency_is_unset_by_default():
    params = TEMPLATE["Parameters"]
    route = RESOURCES["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert route == {"ThrottlingRateLimit": {"Ref": "ThrottlingRateLimit"},
                     "ThrottlingBurstLimit": {"Ref": "ThrottlingBurstLimit"}}
    assert params["ReservedConcurrency"]["Default"] == ""
    assert TEMPLATE["Globals"]["Function"]["ReservedConcurrentExecutions"] == {
        "Fn::If": ["HasReservedConcurrency", {"Ref": "ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]}


def test_logs_are_kept_for_the_retention_parameter_and_the_api_logs_access():
    assert RESOURCES["FunctionLogGroup"]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert TEMPLATE["Globals"]["Function"]["LoggingConfig"]["LogGroup"] == {"Ref": "FunctionLogGroup"}
    access = RESOURCES["HttpApi"]["Properties"]["AccessLogSettings"]
    assert access["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    assert "$context.requestId" in access["Format"] and "$context.status" in access["Format"]
    assert "authorization" not in access["Format"].lower()


def test_alarms_cover_dead_letters_iterator_age_5xx_errors_and_throttles():
    alarms = {n: r["Properties"] for n, r in RESOURCES.items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    names = {p.get("MetricName") for p in alarms.values()}
    assert {"ApproximateNumberOfMessagesVisible", "IteratorAge"} <= names
    math_metrics = {m["MetricStat"]["Metric"]["MetricName"] for p in alarms.values() for m in p.get("Metrics", [])
                    if "MetricStat" in m}
    assert {"5xx", "Count", "Errors", "Throttles"} <= math_metrics
    # the deploy step's failures fail the deploy itself (CloudFormation shows them), not an alarm
    functions = {n for n, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function"} - {"SearchIndexFunction"}
    # One alarm reads at most 10 metrics (a CloudWatch hard limit): the administration and
    # audit functions' errors and throttles have alarms of their own.
    for group in (("FunctionErrorsAlarm", "AdministrationErrorsAlarm"),
                  ("FunctionThrottlesAlarm", "AdministrationThrottlesAlarm")):
        covered = {m["MetricStat"]["Metric"]["Dimensions"][0]["Value"]["Ref"]
                   for alarm in group for m in alarms[alarm]["Metrics"] if "MetricStat" in m}
        assert covered == functions
        metrics = {m["MetricStat"]["Metric"]["MetricName"] for alarm in group for m in alarms[alarm]["Metrics"]
                   if "MetricStat" in m}
        assert len(metrics) == 1
    assert all(sum("MetricStat" in m for m in p.get("Metrics", [])) <= 10 for p in alarms.values())


def test_every_function_is_traced_and_its_role_may_write_traces():
    assert TEMPLATE["Globals"]["Function"]["Tracing"] == "Active"
    functions = {n: r["Properties"] for n, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function"}
    assert not [n for n, p in functions.items() if p.get("Tracing", "Active") != "Active"]
    # Every function has a role of the stack's own (tests/deploy/iam_table.py) listing the two writes;
    # none gets SAM's AWSXrayWriteOnlyAccess.
    for name, props in functions.items():
        role = RESOURCES[props["Role"]["Fn::GetAtt"][0]]["Properties"]
        assert "ManagedPolicyArns" not in role, name
        statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
        xray = [s for s in statements if any(a.startswith("xray:") for a in s.get("Action", []))]
        assert xray == [{"Sid": "LambdaSendsTraces", "Effect": "Allow", "Action": ["xray:PutTraceSegments", "xray:PutTelemetryRecords"],
                         "Resource": "*"}], name
    # The tracer comes with the handler glue: every handler is wrapped by observability.instrumented.
    for app in sorted((REPO / "functions").glob("*/app.py")):
        text = app.read_text()
        assert re.search(r"^@instrumented(\(http=False\))?\ndef lambda_handler\(", text, re.M), app


def test_each_function_ships_its_own_folder_with_the_layer():
    glob = TEMPLATE["Globals"]["Function"]
    assert glob["Handler"] == "app.lambda_handler"
    # the layer of the stack's Architecture (test_layer_architecture.py)
    assert glob["Layers"] == [{"Fn::If": ["IsArm64", {"Ref": "DependenciesLayerArm64"}, {"Ref": "DependenciesLayer"}]}]
    for name, res in RESOURCES.items():
        if res["Type"] == "AWS::Serverless::Function":
            code_uri = res["Properties"]["CodeUri"]
            assert re.fullmatch(r"functions/[a-z_]+/", code_uri), name
            assert (REPO / code_uri / "app.py").exists()
            assert "Handler" not in res["Properties"]
    layer = RESOURCES["DependenciesLayer"]
    assert layer["Properties"]["ContentUri"] == "shared/"
    # shared/Makefile builds it (pinned wheels, agent_memory less what Lambda never imports, bytecode)
    assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": "x86_64"}
    assert "\nbuild-DependenciesLayer build-DependenciesLayerArm64:" in (REPO / "shared" / "Makefile").read_text()


def test_cors_for_the_static_inspector_is_off_unless_origins_are_given():
    param = TEMPLATE["Parameters"]["CorsAllowedOrigins"]
    assert param["Type"] == "String" and param["Default"] == ""
    assert TEMPLATE["Conditions"]["HasCorsOrigins"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "CorsAllowedOrigins"}, ""]}]}
    cors = RESOURCES["HttpApi"]["Properties"]["CorsConfiguration"]["Fn::If"]
    assert cors[0] == "HasCorsOrigins" and cors[2] == {"Ref": "AWS::NoValue"}
    on = cors[1]
    assert on["AllowOrigins"] == {"Fn::Split": [",", {"Ref": "CorsAllowedOrigins"}]} and "AllowCredentials" not in on
    assert {"authorization", "x-memory-partition", "content-type"} <= set(on["AllowHeaders"])


def test_chat_streams_through_its_own_functions_url_beside_the_buffered_route():
    stream = RESOURCES["ChatStreamFunction"]["Properties"]
    chat = RESOURCES["ChatFunction"]["Properties"]
    url = stream["FunctionUrlConfig"]
    # NONE admits the request to the handler, which authenticates it with the stack's keys
    assert url["AuthType"] == "NONE" and url["InvokeMode"] == "RESPONSE_STREAM"
    assert url["Cors"]["Fn::If"][0] == "HasCorsOrigins"
    assert url["Cors"]["Fn::If"][2] == {"Ref": "AWS::NoValue"}
    assert "authorization" in url["Cors"]["Fn::If"][1]["AllowHeaders"]
    # the same code and role rules as the buffered chat, which has no URL and no wrapper
    assert stream["CodeUri"] == chat["CodeUri"] and stream["Role"] == chat["Role"]
    assert "FunctionUrlConfig" not in chat and "Environment" not in chat and "Events" not in stream
    # the buffered route stays on the HTTP API
    assert chat["Events"]["Chat"]["Properties"] == {"ApiId": {"Ref": "HttpApi"}, "Path": "/api/v1/{context_id}/chat",
                                                    "Method": "POST"}
    # the exec wrapper is our runtime loop's, shipped executable in the layer (/opt/python = shared/)
    wrapper = stream["Environment"]["Variables"]["AWS_LAMBDA_EXEC_WRAPPER"]
    shipped = REPO / "shared" / wrapper.removeprefix("/opt/python/")
    assert wrapper.startswith("/opt/python/agent_memory/") and shipped.is_file()
    assert shipped.stat().st_mode & 0o111
    assert "-m agent_memory.http.lambda_runtime" in shipped.read_text()
    assert TEMPLATE["Outputs"]["ChatStreamUrl"]["Value"] == {"Fn::GetAtt": ["ChatStreamFunctionUrl", "FunctionUrl"]}


def test_only_the_streaming_function_reserves_concurrency_by_default():
    param = TEMPLATE["Parameters"]["StreamReservedConcurrency"]
    assert param["Type"] == "Number" and param["Default"] == 10 and param["MinValue"] >= 1
    assert RESOURCES["ChatStreamFunction"]["Properties"]["ReservedConcurrentExecutions"] == \
        {"Ref": "StreamReservedConcurrency"}
    # every other function keeps the global setting, empty (unreserved) unless a stack sets it
    assert TEMPLATE["Parameters"]["ReservedConcurrency"]["Default"] == ""
    others = [n for n, r in RESOURCES.items() if r["Type"] == "AWS::Serverless::Function" and n != "ChatStreamFunction"]
    assert others and all("ReservedConcurrentExecutions" not in RESOURCES[n]["Properties"] for n in others)
