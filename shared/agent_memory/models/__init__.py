"""Pydantic wire models and domain records."""
