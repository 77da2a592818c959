"""What a view gets: the unit of work, the caller, the time, the parsed input."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

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
    # force=true (query string or JSON body): do it even though it breaks an advance reservation,
    # which goes into error; False refuses such a change (inputs.merge_force)
    force: bool = False


@dataclass
class Reply:
    """A view's answer when the route's usual status does not fit."""

    body: object
    status: int
