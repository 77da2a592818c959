"""The scheduler's queue: placing recipe sets when they arrive and when systems free up, why work waits,
and joining the waiting line."""
