"""One configuration object for every entry point (local server, Lambda, CLI, tests).

Sources, lowest precedence first:
1. built-in defaults (offline models and hashing embeddings when no provider key is set);
2. ``agent-memory.yaml`` (path from ``AGENT_MEMORY_CONFIG``, else ``./agent-memory.yaml``);
3. environment variables ``AGENT_MEMORY_*`` (in Lambda these carry template parameters).

``load_settings`` validates everything once, so an unknown provider or a missing key is one
clear ``ConfigurationError`` at startup rather than a stack trace at first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from agent_memory.access.static_principals import StaticPrincipal, parse_principals
from agent_memory.config_slices import Limits, ModelRef, ModelsConfig
from agent_memory.kernel.errors import ConfigurationError

LANGUAGE_PROVIDERS = {"offline", "openai", "bedrock"}
EMBEDDING_PROVIDERS = {"hashing", "openai", "bedrock", "local"}
# local/<model>: late interaction over the model's token vectors; bedrock/<model>: Bedrock's Rerank API
RERANKER_PROVIDERS = {"local", "bedrock"}

@dataclass(frozen=True)
class Settings:
    data_dir: Path
    store: Literal["sqlite", "dynamodb"]
    search: Literal["embedded", "opensearch", "none"]
    models: ModelsConfig
    # How written records reach the search index: inline (after each commit, on the request
    # path), background (a worker thread embeds and indexes batches after the commit; the
    # default with the SQLite store and the embedded index, whose outbox keeps pending work
    # across a crash), or stream (DynamoDB Streams -> the projector function, on AWS).
    projection: Literal["inline", "background", "stream"] = "inline"
    # Read-your-writes with background projection: how long a search of a context waits for
    # that context's projections queued before it (docs/local-server.md); past it the read
    # answers with what is searchable and its trace says ``projectionPending``.
    projection_wait_s: float = 2.0
    # Where the audit log's cost rows (one per successful API request) go: store (a background
    # thread writes them to the record store: the local server), log (a JSON line on stdout that
    # the stack's log subscription writes to the table: deployed), or off.
    audit_usage: Literal["store", "log", "off"] = "store"
    limits: Limits = field(default_factory=Limits)
    tenant: str = "local"
    table_name: str = "agent-memory"
    dynamodb_endpoint: str | None = None
    aws_region: str | None = None
    opensearch_url: str | None = None
    opensearch_service: Literal["es", "aoss"] = "aoss"
    opensearch_index: str | None = None
    opensearch_engine: Literal["faiss", "lucene"] | None = None
    # Whether this process may create the index on first use. Deployed functions may not: the
    # stack's deploy step creates it and the alias they use (adapters/opensearch/admin.py).
    opensearch_create_index: bool = True
    # The paging cursors' key: configured here, else read from Secrets Manager (``cursor_secret_arn``)
    # or generated into ``data_dir`` by the composition root (``runtime.resolve_cursor_secret``).
    cursor_secret: bytes | None = field(default=None, repr=False)
    cursor_secret_arn: str | None = None
    # Deployed: the stack's bootstrap admin key (Secrets Manager), accepted besides stored keys.
    bootstrap_key_secret_arn: str | None = None
    openai_secret_arn: str | None = None
    # Deployed: the SQS queue of document ingestion jobs; unset, jobs run in-process.
    ingestion_queue_url: str | None = None
    # Deployed: the SQS queue of export and import jobs; unset, they run in-process.
    portability_queue_url: str | None = None
    # Deployed: the S3 bucket of presigned document uploads; unset, the uploads route answers 503.
    upload_bucket: str | None = None
    # Deployed: the projector's dead-letter queue, which its scheduled run redrives.
    projection_dead_letter_url: str | None = None
    # The search circuit breaker (adapters/search_breaker.py): consecutive failures that open
    # it, and how long it then stops calling the index.
    search_breaker_failures: int = 3
    search_breaker_cool_down_s: float = 30.0
    # Locally: how often pending projections are retried while the index is behind.
    projection_retry_s: float = 30.0
    default_principal: str = "local-admin"
    # Static API keys (yaml ``principals`` / env AGENT_MEMORY_PRINCIPALS_JSON). Empty: every
    # request is ``default_principal`` with admin rights (single-user local mode).
    principals: tuple[StaticPrincipal, ...] = ()
    # AGENT_MEMORY_REQUIRE_KEYS=1 (yaml ``require_keys: true``): keys are required from start-up
    # even with none stored yet (``access.authentication``: decided once, never by data).
    require_keys: bool = False
    # AGENT_MEMORY_TRUST_FORWARDED=1 (yaml ``trust_forwarded: true``): behind a proxy that sets
    # X-Forwarded-Host/-Proto, URLs the service hands out (upload tickets) use them.
    trust_forwarded: bool = False
    # AGENT_MEMORY_API_URL (yaml ``api_url``): where the MCP route's tool calls reach this API
    # when it is not in-process (on AWS); unset, the domain the request came in on, over HTTPS.
    # Set it behind a custom domain with a base path.
    api_url: str | None = None

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "records.db"

    @property
    def search_path(self) -> Path:
        return self.data_dir / "search.db"

    def describe(self) -> str:
        m = self.models
        return (f"store={self.store} search={self.search} extraction={m.extraction} "
                f"response={m.response} embedding={m.embedding}"
                + (f" reranker={m.reranker}" if m.reranker else "")
                + (" (offline models: deterministic, no network)" if m.response.provider == "offline" else ""))


def _default_models(env: dict[str, str]) -> dict[str, str]:
    if env.get("OPENAI_API_KEY"):
        return {"extraction": "openai/gpt-4o-mini", "response": "openai/gpt-4o-mini",
                "embedding": "openai/text-embedding-3-small"}
    return {"extraction": "offline/deterministic", "response": "offline/deterministic",
            "embedding": "hashing/v1"}


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml  # only local runs read a file; Lambda's cold start skips the import

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        # one line: a command prints it as its whole error
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise ConfigurationError(f"{path}: invalid YAML{where}: {reason}") from exc
    if not isinstance(loaded, dict):
        raise ConfigurationError(f"{path}: expected a mapping at the top level")
    return loaded


def _int(value: Any, setting: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{setting}: expected an integer, got {value!r}") from exc


def _openai_client_choice(raw: Any) -> str:
    """``models.openai_client``: ``library`` (the openai package) or ``http`` (the thin client)."""
    value = str(raw).strip().lower()
    if value not in ("library", "http"):
        raise ConfigurationError(f"models.openai_client must be 'library' or 'http', not {raw!r}")
    return value


def _float(value: Any, setting: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{setting}: expected a number, got {value!r}") from exc


def _bounded(value: float, low: float, high: float, setting: str) -> Any:
    if not low <= value <= high:
        raise ConfigurationError(f"{setting}: expected {low:g} to {high:g}, got {value:g}")
    return value


def load_settings(env: dict[str, str] | None = None, config_path: str | Path | None = None,
                  **overrides: Any) -> Settings:
    env = dict(os.environ if env is None else env)
    path = Path(config_path or env.get("AGENT_MEMORY_CONFIG") or "agent-memory.yaml")
    # In Lambda, settings come from the environment (template parameters) and Secrets Manager
    # only: a file in the working directory is never read there.
    in_lambda = bool(env.get("AWS_LAMBDA_FUNCTION_NAME"))
    file_cfg = _read_yaml(path) if path.exists() and not in_lambda else {}
    if config_path and not path.exists():
        raise ConfigurationError(f"config file {path} does not exist")

    file_models = file_cfg.get("models") or {}
    file_storage = file_cfg.get("storage") or {}
    file_limits = file_cfg.get("limits") or {}

    def pick(env_key: str, file_value: Any, default: Any = None) -> Any:
        value = env.get(env_key)
        return value if value not in (None, "") else (file_value if file_value not in (None, "") else default)

    defaults = _default_models(env)
    extraction = ModelRef.parse(pick("AGENT_MEMORY_MODELS_EXTRACTION", file_models.get("extraction"),
                                     defaults["extraction"]), providers=LANGUAGE_PROVIDERS,
                                setting="models.extraction")
    response = ModelRef.parse(pick("AGENT_MEMORY_MODELS_RESPONSE", file_models.get("response"),
                                   defaults["response"]), providers=LANGUAGE_PROVIDERS,
                              setting="models.response")
    embedding = ModelRef.parse(pick("AGENT_MEMORY_MODELS_EMBEDDING", file_models.get("embedding"),
                                    defaults["embedding"]), providers=EMBEDDING_PROVIDERS,
                               setting="models.embedding")
    allowed_raw = pick("AGENT_MEMORY_MODELS_ALLOWED", file_models.get("allowed"), [])
    if isinstance(allowed_raw, str):
        allowed_raw = [a.strip() for a in allowed_raw.split(",") if a.strip()]
    for name in allowed_raw:
        ModelRef.parse(name, providers=LANGUAGE_PROVIDERS, setting="models.allowed")
    dims = pick("AGENT_MEMORY_EMBEDDING_DIMENSIONS", file_models.get("embedding_dimensions"))
    reranker_raw = str(pick("AGENT_MEMORY_MODELS_RERANKER", file_models.get("reranker"), "none")).strip()
    reranker = None if reranker_raw.lower() in ("none", "off", "") else ModelRef.parse(
        reranker_raw, providers=RERANKER_PROVIDERS, setting="models.reranker")
    models = ModelsConfig(
        extraction=extraction, response=response, embedding=embedding, allowed=tuple(allowed_raw),
        embedding_dimensions=_int(dims, "models.embedding_dimensions") if dims else None,
        reranker=reranker,
        openai_base_url=pick("OPENAI_BASE_URL", file_models.get("openai_base_url")),
        request_timeout_s=_float(pick("AGENT_MEMORY_MODEL_TIMEOUT_S", file_models.get("timeout_s"), 30.0),
                                 "models.timeout_s"),
        openai_client=_openai_client_choice(pick("AGENT_MEMORY_OPENAI_CLIENT", file_models.get("openai_client"),
                                                 "library")),
    )

    limit_fields = {f for f in Limits.__dataclass_fields__}
    limit_values: dict[str, Any] = {}
    for key, value in file_limits.items():
        if key not in limit_fields:
            raise ConfigurationError(f"limits.{key}: unknown limit (known: {', '.join(sorted(limit_fields))})")
        limit_values[key] = value
    for key in limit_fields:
        env_value = env.get(f"AGENT_MEMORY_LIMITS_{key.upper()}")
        if env_value:
            limit_values[key] = env_value
    for key, value in list(limit_values.items()):
        kind = type(getattr(Limits(), key))
        limit_values[key] = _float(value, f"limits.{key}") if kind is float else _int(value, f"limits.{key}")
    limits = Limits(**limit_values)

    store = pick("AGENT_MEMORY_STORE", file_storage.get("records"), "sqlite")
    if store not in ("sqlite", "dynamodb"):
        raise ConfigurationError(f"storage.records: expected sqlite or dynamodb, got {store!r}")
    search = pick("AGENT_MEMORY_SEARCH", file_storage.get("search"), "embedded")
    if search not in ("embedded", "opensearch", "none"):
        raise ConfigurationError(f"storage.search: expected embedded, opensearch or none, got {search!r}")
    opensearch_url = pick("AGENT_MEMORY_OPENSEARCH_URL", file_storage.get("opensearch_url"))
    if search == "opensearch" and not opensearch_url:
        raise ConfigurationError("storage.search is opensearch but no OpenSearch endpoint is set "
                                 "(AGENT_MEMORY_OPENSEARCH_URL or storage.opensearch_url)")
    # Background where the outbox makes it safe (SQLite records + embedded index); inline else.
    projection = pick("AGENT_MEMORY_PROJECTION", file_storage.get("projection"),
                      "background" if (store, search) == ("sqlite", "embedded") else "inline")
    if projection not in ("inline", "background", "stream"):
        raise ConfigurationError(f"storage.projection: expected inline, background or stream, got {projection!r}")
    audit_usage = pick("AGENT_MEMORY_AUDIT_USAGE", file_storage.get("audit_usage"), "store")
    if audit_usage not in ("store", "log", "off"):
        raise ConfigurationError(f"storage.audit_usage: expected store, log or off, got {audit_usage!r}")
    tenant = pick("AGENT_MEMORY_TENANT", file_cfg.get("tenant"), "local")
    breaker_cfg = file_storage.get("search_breaker") or {}
    if not isinstance(breaker_cfg, dict) or set(breaker_cfg) - {"failures", "cool_down_s"}:
        raise ConfigurationError("storage.search_breaker: expected a mapping with failures and cool_down_s")
    breaker_failures = _bounded(_int(pick("AGENT_MEMORY_SEARCH_BREAKER_FAILURES", breaker_cfg.get("failures"), 3),
                                     "storage.search_breaker.failures"), 1, 100, "storage.search_breaker.failures")
    breaker_cool_down = _bounded(_float(pick("AGENT_MEMORY_SEARCH_BREAKER_COOL_DOWN_S",
                                             breaker_cfg.get("cool_down_s"), 30.0),
                                        "storage.search_breaker.cool_down_s"),
                                 1.0, 3600.0, "storage.search_breaker.cool_down_s")
    projection_retry = _bounded(_float(pick("AGENT_MEMORY_PROJECTION_RETRY_S", file_storage.get("projection_retry_s"),
                                            30.0), "storage.projection_retry_s"),
                                1.0, 3600.0, "storage.projection_retry_s")
    projection_wait = _bounded(_float(pick("AGENT_MEMORY_PROJECTION_WAIT_S", file_storage.get("projection_wait_s"),
                                           2.0), "storage.projection_wait_s"),
                               0.0, 30.0, "storage.projection_wait_s")
    settings = Settings(
        data_dir=Path(pick("AGENT_MEMORY_DATA_DIR", file_storage.get("data_dir"), ".agent-memory")),
        store=store,
        search=search,
        projection=projection,
        audit_usage=audit_usage,
        models=models,
        limits=limits,
        tenant=tenant,
        table_name=pick("AGENT_MEMORY_TABLE", file_storage.get("table"), "agent-memory"),
        dynamodb_endpoint=pick("AGENT_MEMORY_DYNAMODB_ENDPOINT", file_storage.get("dynamodb_endpoint")),
        aws_region=pick("AWS_REGION", file_storage.get("region"), env.get("AWS_DEFAULT_REGION")),
        opensearch_url=opensearch_url,
        opensearch_service=pick("AGENT_MEMORY_OPENSEARCH_SERVICE", file_storage.get("opensearch_service"), "aoss"),
        opensearch_index=pick("AGENT_MEMORY_OPENSEARCH_INDEX", file_storage.get("opensearch_index"),
                              f"agent-memory-{tenant}"),
        opensearch_engine=pick("AGENT_MEMORY_OPENSEARCH_ENGINE", file_storage.get("opensearch_engine")),
        opensearch_create_index=str(pick("AGENT_MEMORY_OPENSEARCH_CREATE_INDEX",
                                         file_storage.get("opensearch_create_index"), "true")).lower()
        not in ("false", "0", "no"),
        cursor_secret_arn=pick("AGENT_MEMORY_CURSOR_SECRET_ARN", file_cfg.get("cursor_secret_arn")),
        openai_secret_arn=pick("AGENT_MEMORY_OPENAI_SECRET_ARN", None),
        ingestion_queue_url=pick("AGENT_MEMORY_INGESTION_QUEUE_URL", None),
        portability_queue_url=pick("AGENT_MEMORY_PORTABILITY_QUEUE_URL", None),
        upload_bucket=pick("AGENT_MEMORY_UPLOAD_BUCKET", None),
        projection_dead_letter_url=pick("AGENT_MEMORY_PROJECTION_DEAD_LETTER_URL", None),
        search_breaker_failures=breaker_failures,
        search_breaker_cool_down_s=breaker_cool_down,
        projection_retry_s=projection_retry,
        projection_wait_s=projection_wait,
        bootstrap_key_secret_arn=pick("AGENT_MEMORY_BOOTSTRAP_KEY_SECRET_ARN", None),
        default_principal=pick("AGENT_MEMORY_DEFAULT_PRINCIPAL", file_cfg.get("default_principal"), "local-admin"),
        principals=parse_principals(env.get("AGENT_MEMORY_PRINCIPALS_JSON"), file_cfg.get("principals")),
        require_keys=str(pick("AGENT_MEMORY_REQUIRE_KEYS", file_cfg.get("require_keys"), "false")).lower()
        in ("1", "true", "yes"),
        trust_forwarded=str(pick("AGENT_MEMORY_TRUST_FORWARDED", file_cfg.get("trust_forwarded"), "false")).lower()
        in ("1", "true", "yes"),
        api_url=(pick("AGENT_MEMORY_API_URL", file_cfg.get("api_url")) or "").rstrip("/") or None,
        cursor_secret=(pick("AGENT_MEMORY_CURSOR_SECRET", file_cfg.get("cursor_secret")) or "").encode() or None,
    )
    if overrides:
        settings = replace(settings, **overrides)
    _check_provider_keys(settings, env)
    return settings


def _check_provider_keys(settings: Settings, env: dict[str, str]) -> None:
    m = settings.models
    uses_openai = any(ref.provider == "openai" for ref in (m.extraction, m.response, m.embedding))
    uses_openai = uses_openai or any(a.startswith("openai/") for a in m.allowed)
    if uses_openai and not (env.get("OPENAI_API_KEY") or settings.openai_secret_arn or m.openai_base_url):
        raise ConfigurationError("an openai/ model is configured but OPENAI_API_KEY is not set "
                                 "(nor AGENT_MEMORY_OPENAI_SECRET_ARN, nor OPENAI_BASE_URL for a compatible server)")
    uses_bedrock = any(ref is not None and ref.provider == "bedrock"
                       for ref in (m.extraction, m.response, m.embedding, m.reranker))
    if uses_bedrock and not (settings.aws_region or env.get("AWS_LAMBDA_FUNCTION_NAME")):
        raise ConfigurationError("a bedrock/ model is configured but no AWS region is set (AWS_REGION)")
