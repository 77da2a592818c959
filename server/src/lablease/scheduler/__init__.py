"""Pure planning over a snapshot: host filters with reasons, candidates, recipe-set placement.

Nothing here touches the database or the clock; services/queue/scheduling.py takes
a snapshot, asks for a plan and applies it in one transaction.
"""
