"""What a view gets: the unit of work, the caller, the time, the parsed input."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

from ...config import Settings
from ...domain.paging import PageRequest
from ...domain.permissions import Actor
from ...store.uow import UnitOfWork


@dataclass
class Context:
    uow: UnitOfWork
    actor: Actor | None
    now: datetime
    settings: Settings
    args: dict
    body: dict = field(default_factory=dict)
    query: dict = field(default_factory=dict)
    raw: bytes = b""
    mimetype: str = ""
    page: PageRequest = field(default_factory=PageRequest)  # a list's page (routes.PAGING)
    headers: dict = field(default_factory=dict)  # the request's headers (a view reads those its route names)
    # force=true (query string or JSON body): do it even though it breaks an advance reservation,
    # which goes into error; False refuses such a change (inputs.merge_force)
    force: bool = False
    # (method, path, query, body) -> (status, answer): another route's view run in this unit of work
    # (POST /batch); set by the application
    call: Callable[[str, str, dict, object], tuple[int, object]] | None = None


@dataclass
class Reply:
    """A view's answer when the route's usual status does not fit."""

    body: object
    status: int
