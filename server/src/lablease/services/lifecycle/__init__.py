"""A lease over its life: reservations extended, heartbeats, returns and expiry; loans; jobs and their
recipes (Beaker's view of them too); installer callbacks; health checks at work; advance reservations over time."""
