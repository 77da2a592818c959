"""The refusal of a whole import file (`lablease-server system import`, `import beaker-csv`), in a module of its own:
the command line catches it for every command without loading what an import needs (the API's input checks)."""
from __future__ import annotations


class ImportRefused(Exception):
    """The file, or some of its rows, refused: one line each; nothing was imported."""
