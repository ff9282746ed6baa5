"""Test doubles that tests, benchmarks and local runs share (not used by the service itself)."""
