"""A problem found at a place in the job's JSON form, before it becomes Invalid."""
from __future__ import annotations

from ..domain.errors import format_path


class PathError(Exception):
    def __init__(self, path: tuple, reason: str):
        super().__init__(f"{format_path(path)}: {reason}")
        self.path = path
        self.reason = reason

    @property
    def field(self) -> str:
        return format_path(self.path)
