"""Retrieval and context: ranked, cited memory for a query and the prompt text made from it."""
