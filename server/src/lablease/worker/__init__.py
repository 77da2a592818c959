"""Background work: expiry of reservations and loans, warnings, outbox delivery."""
