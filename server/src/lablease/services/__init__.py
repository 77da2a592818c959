"""Use cases: each takes a unit of work, the acting user and the time."""
