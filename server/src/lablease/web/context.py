"""What a page's view gets (PageContext) and what it answers (Render, Redirect)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from werkzeug.datastructures import MultiDict

from ..config import Settings
from ..domain.permissions import Actor
from ..store.uow import UnitOfWork
from .throttle import FailedSignIns


@dataclass
class Render:
    """Render `template` with `values` (plus what every page gets: see app.WebPages.render)."""

    template: str
    values: dict = field(default_factory=dict)
    status: int = 200
    headers: dict = field(default_factory=dict)  # e.g. Retry-After on a 429


@dataclass
class Redirect:
    """303 See Other to `location` (post/redirect/get), with an optional flash message for the next page."""

    location: str
    message: str | None = None
    category: str = "info"  # info | error
    session: str | None = None  # sign-in: the new session's secret, for the session cookie
    end_session: bool = False  # sign-out: the session cookie is cleared


@dataclass
class PageContext:
    uow: UnitOfWork
    actor: Actor | None
    now: datetime
    settings: Settings
    args: dict  # from the path
    query: MultiDict  # the query string
    form: MultiDict  # a POST's fields (CSRF already checked)
    path: str  # this page's path with its query string, for links back to it
    session_secret: str | None = None  # the session cookie's value (sign-out revokes it)
    base_url: str = ""  # how the browser reached us (`public_url` when set), for addresses shown to copy
    client: str = ""  # the client's address (REMOTE_ADDR): failed sign-ins are counted per address too
    signins: FailedSignIns | None = None  # the process's count of failed sign-ins (web/throttle.py)

    def render(self, template: str, status: int = 200, headers: dict | None = None, **values) -> Render:
        return Render(template, values, status, headers or {})
