"""What the lab keeps a record of: the activity log, usage and utilisation history, the event feed,
what falls due with time, and the answers idempotency keys got."""
