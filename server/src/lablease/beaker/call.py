"""What a hub method or REST handler gets: the unit of work, the caller, the time, the request's input."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from werkzeug.datastructures import MultiDict

from ..config import Settings
from ..domain.errors import Unauthenticated
from ..domain.permissions import Actor
from ..store.uow import UnitOfWork
from ..web.throttle import FailedSignIns


# Who reads what Beaker serves without a login (bkr's distro-trees-list, distros-list, group-members, job-list,
# job-results, job-watch, job-logs, watchdog-show log in to nothing): a caller with no user, no group and no
# right beyond what a rule grants everybody; user id 0 is nobody's.
ANONYMOUS = Actor(0, "", False, frozenset())


@dataclass
class Call:
    uow: UnitOfWork
    actor: Actor | None  # None only in the methods registered with auth=False
    now: datetime
    settings: Settings
    base_url: str  # how the client reached the hub: <server>/bkr (its public_url when set)
    query: MultiDict = field(default_factory=MultiDict)  # REST: the query string
    body: object = None  # REST: the JSON body, parsed (None without one)
    client: str = ""  # the client's address: failed logins are counted per address too
    signins: FailedSignIns | None = None  # the process's failed sign-ins, shared with the web pages
    session_secret: str | None = None  # the session cookie's value, if the client sent one
    # What the answer does to the session cookie: a new secret (login) or "" (logout: cleared)
    new_session: str | None = None

    @property
    def user(self) -> Actor:
        if self.actor is None:  # a method registered with auth=False that needs a user after all
            raise Unauthenticated("please log in first (auth.login_password or auth.login_oauth2)")
        return self.actor

    @property
    def reader(self) -> Actor:
        """The signed-in user, or ANONYMOUS in a method registered with auth=False that anyone may read."""
        return self.actor if self.actor is not None else ANONYMOUS
