"""Use cases: each takes a unit of work, the acting user and the time (one made by
`handlers.unit_of_work`, whose events reach the handler table)."""
