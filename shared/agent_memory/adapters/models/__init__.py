"""Language model adapters: OpenAI-compatible chat, Bedrock Converse, and an offline model,
one module per provider (``openai_chat``, ``bedrock_converse``, ``offline``), found through
``registry``.

All three implement ``agent_memory.ports.LanguageModel``. Provider SDKs (``openai``,
``boto3``/``botocore``) are imported inside constructors and methods, never at module
level, so that importing these modules (as every Lambda and the local server does) costs
nothing when a provider is not used and works where an SDK is not installed.

Error policy, shared by the providers:

- transient failures (connection errors, HTTP 429, 5xx, Bedrock throttling) are retried
  at most ``max_retries`` times with exponential backoff and full jitter; the SDK's own
  retries are switched off so attempts are not multiplied;
- timeouts are *not* retried: a model that did not answer within ``timeout`` will most
  likely not answer in the next window either, and retrying would push the request past
  the API Gateway limit (29 s). They surface as ``ModelTimeout`` (HTTP 504);
- anything else surfaces as ``ModelError`` (HTTP 502);
- output that does not validate against the requested schema raises
  ``ModelOutputInvalid`` at once; the caller owns the one retry the design allows.

Shared by the providers: ``retries`` (the policy above, within the request deadline),
``schemas`` (schema strictification and output validation), and the clients with their error
mapping (``openai_client``, ``bedrock_client``), which the embedders use too. Nothing is
imported here.
"""
