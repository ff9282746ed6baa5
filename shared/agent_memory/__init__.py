"""agent-memory: memory service for LLM agents."""
