"""Telling people: notices queued with their cause, the outbox that delivers them, webhook destinations."""
