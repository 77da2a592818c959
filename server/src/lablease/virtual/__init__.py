"""Simulated lab machines for the `virtual` power driver: `python -m lablease.virtual --help`."""
