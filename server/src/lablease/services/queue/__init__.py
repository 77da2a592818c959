"""Work that waits for systems: the scheduler placing recipe sets and booking their systems, why work waits,
and the waiting line for people (joining it, granting from it)."""
