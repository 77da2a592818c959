"""A system's booking made and ended: reserve, the hold limits, and what ending a reservation or loan writes
(the use cases that return, extend and expire are in lifecycle/)."""
