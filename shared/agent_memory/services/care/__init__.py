"""Memory care: consolidate, reflect, elaborate, lifecycle (decay, expire) and fsck
(docs/memory-care.md)."""
