"""POST /chat: the whole loop (window, retrieval, one response call, citations, tier-2
cache, persistence on success only). ``service.ChatService`` is the entry point."""
