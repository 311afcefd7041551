"""Schedule: execution order (toposort), engines, logical streams and sync events (DESIGN.md §5)."""
