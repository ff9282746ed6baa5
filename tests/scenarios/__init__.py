"""Memory over time, table-driven: each scenario (``table.SCENARIOS``) is a list of steps run
through the local server in a fresh context (``steps`` says what each step does)."""
