"""lablease: borrow lab hardware safely."""

__version__ = "0.1.0"
