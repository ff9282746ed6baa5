"""Plain helpers that test directories share (``from tests.support.<module> import ...``);
the fixtures built on them live in the conftest files."""
