"""Index administration for OpenSearch: the one place that creates indexes and moves aliases.

Deployed functions read and write documents through an alias (``agent-memory-<tenant>``) and
never create an index. The stack's deploy step (``functions/search_index``, a CloudFormation
custom resource) and ``agent-memory reindex --rebuild`` call ``provision`` here:

- The concrete index is versioned by its body: ``<alias>-<fingerprint>``, the fingerprint a
  hash of the settings and mapping (embedder name and dimension, k-NN engine, schema
  version). The same configuration always names the same index, so a redeploy is a no-op.
- A first deploy creates the index and points the alias at it.
- A changed embedder or mapping creates the new index *beside* the one the alias points at
  and leaves the alias where it is (``needs_rebuild``): the old index keeps answering until
  ``agent-memory reindex --rebuild`` has filled the new one from the table and ``switch``
  moves the alias in one ``POST /_aliases``. The old index stays until an operator deletes it.
- An index that was created lazily under the alias's own name (before aliases) is reported
  as ``legacy``; ``switch`` replaces it with the alias (``remove_index``) once rebuilt.

Every request names the tenant's alias or index, except ``POST /_aliases`` whose body names
only them (OpenSearch has no index-scoped form of an atomic alias swap).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_memory.adapters.opensearch.mapping import SCHEMA_VERSION, Engine, index_body

log = logging.getLogger("agent_memory.opensearch_admin")

# A new collection's data access policy takes "about a minute" to be enforced, and AWS asks for
# a support case past 5 minutes (https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-data-access.html);
# meanwhile the collection answers 403 (or 404 while its endpoint is not serving yet).
PROPAGATION_STATUSES = (403, 404)
FIRST_BACKOFF_S = 2.0
MAX_BACKOFF_S = 30.0


class ProvisionRefused(RuntimeError):
    """The collection kept refusing the index step until its time ran out; ``str()`` is the
    reason CloudFormation shows in the stack's events."""


def fingerprint(body: dict[str, Any]) -> str:
    """Ten hex digits of the index body's canonical JSON (with the schema version)."""
    canonical = json.dumps({"schema": SCHEMA_VERSION, "body": body}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def versioned_name(alias: str, body: dict[str, Any]) -> str:
    return f"{alias}-{fingerprint(body)}"


@dataclass(frozen=True)
class Provisioned:
    alias: str
    index: str  # the concrete index for the current configuration
    serving: str | None  # the index the alias points at after the call (None: legacy index)
    created: bool
    switched: bool
    legacy: bool = False

    @property
    def needs_rebuild(self) -> bool:
        """The alias still points at another index (or a legacy one holds its name)."""
        return self.serving != self.index

    def as_data(self) -> dict[str, str]:
        """CloudFormation custom resource ``Data`` (strings only)."""
        return {"Alias": self.alias, "IndexName": self.index, "Serving": self.serving or self.alias,
                "Created": str(self.created).lower(), "NeedsRebuild": str(self.needs_rebuild).lower()}


def _not_found(exc: BaseException) -> bool:
    from opensearchpy.exceptions import NotFoundError

    return isinstance(exc, NotFoundError)


def alias_targets(client: Any, alias: str) -> set[str] | None:
    """The indexes ``alias`` points at, or ``None`` when there is no such alias."""
    try:
        found = client.indices.get_alias(name=alias)
    except Exception as exc:
        if _not_found(exc):
            return None
        raise
    return {name for name, entry in found.items() if alias in (entry.get("aliases") or {})} or None


def ensure_index(client: Any, name: str, body: dict[str, Any]) -> bool:
    """Create ``name`` with ``body`` unless it exists; True when this call created it."""
    if client.indices.exists(index=name):
        return False
    try:
        client.indices.create(index=name, body=body)
    except Exception:
        if not client.indices.exists(index=name):  # a concurrent creator is fine
            raise
        return False
    return True


def provision(client: Any, alias: str, embedder_name: str, dimension: int, engine: Engine,
              *, switch_if_unset: bool = True) -> Provisioned:
    """Make the current configuration's index and, on a first deploy, the alias to it."""
    body = index_body(embedder_name, dimension, engine)
    name = versioned_name(alias, body)
    return _serve(client, alias, name, ensure_index(client, name, body), switch_if_unset=switch_if_unset)


def _serve(client: Any, alias: str, name: str, created: bool, *, switch_if_unset: bool = True) -> Provisioned:
    """The alias half of ``provision``: point a missing alias at ``name`` (first deploy)."""
    targets = alias_targets(client, alias)
    if targets is None:
        if client.indices.exists(index=alias):  # a lazily created index under the alias's name
            return Provisioned(alias, name, None, created, False, legacy=True)
        if not switch_if_unset:
            return Provisioned(alias, name, None, created, False)
        client.indices.update_aliases(body={"actions": [{"add": {"index": name, "alias": alias}}]})
        return Provisioned(alias, name, name, created, True)
    serving = name if targets == {name} else sorted(targets)[0]
    return Provisioned(alias, name, serving, created, False)


def switch(client: Any, alias: str, index: str) -> None:
    """Point ``alias`` at ``index`` only, in one atomic ``POST /_aliases`` (an index that
    holds the alias's own name is removed in the same call)."""
    actions: list[dict[str, Any]] = []
    targets = alias_targets(client, alias)
    if targets is None and client.indices.exists(index=alias):
        actions.append({"remove_index": {"index": alias}})
    for old in sorted((targets or set()) - {index}):
        actions.append({"remove": {"index": old, "alias": alias}})
    if targets != {index}:
        actions.append({"add": {"index": index, "alias": alias}})
        client.indices.update_aliases(body={"actions": actions})


def _refusal_status(exc: BaseException) -> int | None:
    """The HTTP status of a refusal a data access policy still propagating gives, else None."""
    from opensearchpy.exceptions import TransportError

    status = getattr(exc, "status_code", None) if isinstance(exc, TransportError) else None
    return status if isinstance(status, int) and status in PROPAGATION_STATUSES else None


def provision_with_retry(client: Any, alias: str, embedder_name: str, dimension: int, engine: Engine, *,
                         budget_s: float, sleep: Callable[[float], None] = time.sleep,
                         clock: Callable[[], float] = time.monotonic) -> Provisioned:
    """``provision``, retried with exponential backoff (2 s doubling to 30 s) while the collection
    answers 403 or 404, for at most ``budget_s`` seconds; then ``ProvisionRefused`` with the
    attempts, the time spent and the last refusal. Anything else fails at once (a wrong
    endpoint, a bad mapping). Each attempt is idempotent: an index or alias a refused attempt
    already made is found, not made twice, and ``created`` says whether any attempt made it."""
    body = index_body(embedder_name, dimension, engine)
    name = versioned_name(alias, body)
    start = clock()
    attempts = 0
    created = False  # by an earlier attempt whose alias step was refused
    delay = FIRST_BACKOFF_S
    while True:
        attempts += 1
        try:
            if not created:
                created = ensure_index(client, name, body)
            return _serve(client, alias, name, created)
        except Exception as exc:
            status = _refusal_status(exc)
            if status is None:
                raise
            waited = clock() - start
            if waited + delay > budget_s:
                raise ProvisionRefused(
                    f"the search collection still answered {status} after {attempts} attempts over {waited:.0f} s: "
                    f"its data access policy (SearchDataAccessPolicy) may not be in force yet (AWS: about a minute, "
                    f"support past 5 minutes) or does not name this function's role; last refusal: {exc}") from exc
            log.warning("search index setup refused with %s (attempt %d, %.0f s so far): retrying in %.0f s",
                        status, attempts, waited, delay)
            sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)
