"""Background work: returning reservations at their end or missed heartbeat."""
