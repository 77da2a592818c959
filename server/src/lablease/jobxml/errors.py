"""A problem found at a place in the job's JSON form, before it becomes Invalid."""
from __future__ import annotations


class PathError(Exception):
    def __init__(self, path: tuple, reason: str):
        super().__init__(f"{format_path(path)}: {reason}")
        self.path = path
        self.reason = reason

    @property
    def field(self) -> str:
        return format_path(self.path)


def format_path(path: tuple) -> str:
    """("recipe_sets", 0, "recipes", 1, "force") -> "recipe_sets[0].recipes[1].force"."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "job"
