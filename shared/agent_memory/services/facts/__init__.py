"""Memory writes and reconciliation: the write path, the fact kinds, reconciliation rules, and reads of the memory graph."""
