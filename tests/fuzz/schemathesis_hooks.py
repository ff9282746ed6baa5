r"""Schemathesis hooks for the bounded run (``test_schemathesis_run.py``).

One hook, ``filter_failure``: a "schema-valid request rejected" failure (a 400 to a
request the schema allows) is dropped only when the problem document names a rule the
service documents that the OpenAPI 3.0 schema does not express. Every other failure (a
5xx, a response off its schema, any other rejection) fails the run.

The rules, by the detail text of the 400:
- documented request rules OpenAPI cannot state: the recall filters' cross-field rules
  (``asOf``/``atInstant`` agreeing, ``validFrom`` before ``validUntil``, ``scopeView`` with a
  lens, no ``*`` in a lens, a WKT polygon's grammar), an opaque cursor the service did not
  issue, ``cursor`` with ``after_index``, an empty ``since``..``until`` window, a model not
  in ``models.allowed``, an ``Idempotency-Key`` header that disagrees with the body's key,
  entity references that must be ``type/name``, an entity name with no letter or digit, a
  multipart upload with both a file part and a text field, an empty file part, metadata keys
  longer than the limit (OpenAPI 3.0 has no ``propertyNames``), entity names, path ids and
  scope paths over their byte limits (``maxLength`` counts characters), a model-call budget over the deployment's own
  limit (``limits`` in its settings), an inspect reference's entity type and normalised names,
  and an instant with a window on inspect, and the lines of an import's export stream
  (``application/x-ndjson``, whose line schema is docs/export.schema.json);
- the scope routes' own paths (POST /scopes, /scopes/forget, DELETE /scopes: '/' and a
  trailing '/' have meanings there, so only ScopePath elsewhere states the characters), an
  entity id's printable characters and a blank query text (not yet patterns), and a triple's
  key with its value or its target (cross-field rules). Labels, readers, titles, a document's text and the
  scopes of every body are stated in openapi.yaml (``ScopePath``, ``ReaderList``; each
  pattern held to the service's rule under both regex engines by
  tests/unit/test_spec_patterns.py).
- a grant's verbs other than memory:read and memory:write named at a path other than '/', a
  revoke under a path whose verb is held at '/' (it depends on the stored grants), and a
  declared upload size past the deployment's ``limits.document_bytes`` (a 413);
- a file part's content: unlike its declared type (415), a PDF with no text (422), a
  ``metadata`` form field that is not JSON.

And a 406 from ``POST /mcp`` whose request did not accept both application/json and
text/event-stream (the MCP transport's rule; OpenAPI 3.0 ignores an ``Accept`` parameter).

A 413 ``payload-too-large`` to a schema-violating body is a refusal, which schemathesis' list of
rejecting statuses leaves out.

In the open run only (``AGENT_MEMORY_FUZZ_OPEN_SERVICE=1``), a request without
``Authorization`` that is answered: a service started without keys needs none, by design.

One 5xx is dropped too: the documented 501 ``uploads_unavailable`` of
``POST /documents/uploads`` (a deployed function without an upload bucket answers exactly
that, by design; the local server serves the route from its own upload store).
"""

from __future__ import annotations

import json
import os
import re

import schemathesis

_DOCUMENTED_400 = re.compile("|".join([
    r"cursor is malformed or was not issued by this service",
    r"pass cursor or after_index, not both",
    r"since must be before until",
    r"is not in models\.allowed",
    r"Idempotency-Key header and idempotency_key differ",
    r"must be type/name",
    r"entity name is empty",
    r"as a file part or a text field, not both",
    # both spellings of an aliased field that disagree (equal ones are accepted)
    r"are two spellings of one field and differ",
    r"form field .* appears more than once",  # a multipart field given twice
    r"Idempotency-Key must be 1-255 characters",  # the body's idempotency_key: blank (the header states it)
    r"an integer has more than 20 digits",  # the parse-time JSON bound (agent_memory.http.safe_json)
    r"not valid UTF-8 text",  # an uploaded document must be text
    r"triples are only accepted with infer: triples",
    r"text: required \(only a write of triples may leave it out\)",  # text or triples (docs/http-api.md)
    r"at most one of value, target or verb",  # a triple's object: one kind (a cross-field rule)
    r"\.key: required with value",  # a triple's key with its value (a cross-field rule, as above)
    r"the relation label is required with target",  # a triple's key with its target (as above)
    r"must be an entity id such as",
    r"speaker name must contain a letter or digit",
    # the scope routes' own paths (POST /scopes, /scopes/forget, DELETE /scopes), which take
    # '/' or a trailing '/' besides a ScopePath, so the schema gives them minLength only
    r"invalid scope path segment",
    r"a registered scope cannot hold a wildcard",  # a '*' segment: a grant's, never a scope's
    r"empty scope (path|clause)",
    r"printable characters",
    r"must not contain control characters other than tab",  # a thread text's C0 controls
    r"sessionId must not contain control characters",  # a body's session id (path ids state it)
    # path ids and scope paths: a byte bound where maxLength counts characters (openapi PathId)
    r"must be 1 to \d+ bytes \(UTF-8\) long",
    r"is longer than \d+ bytes",
    r"a scope path is at most \d+ bytes",
    r"must not be blank",
    r"a grant path must be a non-empty string",  # a blank path: the schema states only minLength
    r"held for the whole context only; grant it at '/'",  # verbs but read and write: path '/' only
    # an empty file part: schemathesis does not hold format: binary parts to minLength
    r"the document is empty",
    r"metadata keys must be 1-\d+ characters",  # OpenAPI 3.0 has no propertyNames
    r"entity name is longer than \d+ bytes",  # maxLength counts characters, the rule bytes
    # the recall filters' cross-field rules (docs/http-api.md "Recall filters")
    r"asOf and atInstant both name the instant to read at and differ",
    r"validFrom: must be before validUntil",
    r"scopeView: \w+ needs a lens to view",
    r"lens paths name scopes: no '\*' segments",
    r"location\.within: ",  # a WKT polygon's grammar and ring rules
    # GET /inspect: a reference's type from the closed vocabulary, its names and keys normalised
    # (every such 400 names the grammar), and an instant and a window are two readings
    r"a reference is entity:<type>/<name>",
    r"an instant \(asOf, atInstant\) and a window \(validFrom, validUntil\) are two readings",
    # a bound a deployment sets (limits in its settings), which a static schema cannot name
    r"at most \d+ \(this deployment's limit\)",
    r"document is over the \d+-byte limit",  # a declared upload size past limits.document_bytes (413)
    # POST /import: the body is an export stream, whose lines the schema cannot state (docs/export.md)
    r"^line \d+: ",
    r"^empty stream: an export starts with its header line",
    r"has no extractable text",  # a file part's content (a PDF of no text, a 422): format: binary cannot say
    r"the file claims to be ",  # a file part unlike its declared type (415, not_what_it_claims), as above
    r"metadata: not JSON",  # a multipart text field that carries JSON: OpenAPI 3.0 cannot say so
    # a revoke under a path whose verb is held at '/': depends on the grants stored, not the request
    r"is held for the whole context: revoke it at '/'",
]))

# The open run (AGENT_MEMORY_FUZZ_OPEN_SERVICE=1): a service started without keys answers without
# Authorization by design (single-user mode), so openapi.yaml's bearerAuth does not bind it; the
# keys-required run holds every route to it.
_OPEN_SERVICE = os.environ.get("AGENT_MEMORY_FUZZ_OPEN_SERVICE") == "1"


def _about_missing_authorization(failure) -> bool:
    name = type(failure).__name__
    if name == "MissingHeaderNotRejected":
        return getattr(failure, "header_name", "").lower() == "authorization"
    # one invalid component, or several of which a missing Authorization is one
    return name == "AcceptedNegativeData" and "Authorization" in (failure.message or "")


def _problem(response) -> dict:
    try:
        raw = response.content if isinstance(response.content, bytes | str) else b""
        body = json.loads(raw)
        return body if isinstance(body, dict) else {}
    except (ValueError, AttributeError, TypeError):
        return {}


def _detail(response) -> str:
    return str(_problem(response).get("detail", ""))


@schemathesis.hook
def filter_failure(ctx, failure, case, response):
    if _OPEN_SERVICE and _about_missing_authorization(failure):
        return False
    # A body over the route's cap answered 413 payload-too-large is a refusal (RFC 9110), which
    # schemathesis' list of rejecting statuses for negative data leaves out.
    if (type(failure).__name__ == "AcceptedNegativeData" and getattr(response, "status_code", None) == 413
            and str(_problem(response).get("type", "")).endswith("/payload-too-large")):
        return False
    if (getattr(response, "status_code", None) == 501 and _problem(response).get("code") == "uploads_unavailable"
            and case.path.endswith("/documents/uploads")):
        return False
    # 415 too: a file part whose bytes are not what its content type claims (not_what_it_claims,
    # documented as UnsupportedDocument) is a rule format: binary cannot state
    # 406 from /mcp: the MCP transport needs Accept to admit application/json and
    # text/event-stream, and OpenAPI 3.0 ignores an Accept header parameter, so it cannot say so
    if (getattr(response, "status_code", None) == 406 and case.path.endswith("/mcp")
            and type(failure).__name__ == "RejectedPositiveData"):
        return False
    if getattr(response, "status_code", None) not in (400, 413, 415, 422) \
            or type(failure).__name__ != "RejectedPositiveData":
        return True
    detail = _detail(response)
    if not _DOCUMENTED_400.search(detail):
        return True
    return False


# POST /import's body is an export stream (NDJSON): schemathesis sends a generated string as text.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
