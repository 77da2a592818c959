"""Command lines: `lablease-server` (administration) and `lablease` (client)."""
