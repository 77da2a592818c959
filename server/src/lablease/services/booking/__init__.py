"""Taking a system and giving it back: reserve, the waiting line for people, placing recipes on systems,
the hold limits, and what ending a reservation or loan writes."""
