"""Every page and form action, once: path, method, view (the API's route table is api/routes.py).

A GET page renders a template; a POST is a form action that does one thing through a use case and
redirects (303) to a page (post/redirect/get). `auth=False` only for the sign-in form and the calendar
feed (whose URL carries its own secret).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from werkzeug.routing import Map, Rule

from ..api.routes import shared_map
from .views import account, advance, calendar, jobs, pools, reservations, systems, utilisation


@dataclass(frozen=True)
class Page:
    method: str
    path: str
    view: Callable
    auth: bool = True

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"


PAGES = [
    Page("GET", "/", account.home),
    Page("GET", "/login", account.login_form, auth=False),
    Page("POST", "/login", account.login, auth=False),
    Page("POST", "/logout", account.logout),
    Page("GET", "/systems", systems.listing),
    Page("GET", "/systems/<fqdn>", systems.show),
    Page("POST", "/systems/<fqdn>/take", systems.take),
    Page("POST", "/systems/<fqdn>/borrow", systems.borrow),
    Page("POST", "/systems/<fqdn>/return-loan", systems.return_loan),
    Page("GET", "/reservations", reservations.mine),
    Page("POST", "/reservations", reservations.take),
    Page("POST", "/reservations/<int:id>/extend", reservations.extend),
    Page("POST", "/reservations/<int:id>/return", reservations.give_back),
    Page("POST", "/calendar/rotate", calendar.rotate),
    Page("GET", "/pools", pools.listing),
    Page("GET", "/pools/<name>", pools.show),
    Page("GET", "/queue", jobs.queue),
    Page("GET", "/jobs", jobs.listing),
    Page("GET", "/jobs/<int:id>", jobs.show),
    Page("POST", "/jobs/<int:id>/cancel", jobs.cancel),
    Page("GET", "/advance-reservations", advance.listing),
    Page("POST", "/advance-reservations", advance.create),
    Page("GET", "/advance-reservations/<ident>", advance.show),
    Page("POST", "/advance-reservations/<ident>/modify", advance.modify),
    Page("POST", "/advance-reservations/<ident>/delete", advance.delete),
    Page("GET", "/utilisation", utilisation.show),
    Page("GET", "/utilisation.csv", utilisation.csv),
    Page("GET", "/calendar/<user>/<token>.ics", calendar.feed, auth=False),
]

# The navigation of layout.html: (label, path). A page not built yet answers 404.
NAV = [
    ("Systems", "/systems"),
    ("Pools", "/pools"),
    ("My reservations", "/reservations"),
    ("Queue", "/queue"),
    ("Jobs", "/jobs"),
    ("Advance reservations", "/advance-reservations"),
    ("Utilisation", "/utilisation"),
]

STATIC_PATHS = ("/static/<path:name>", "/favicon.ico")


def url_map(pages: list[Page]) -> Map:
    def rules() -> list[Rule]:
        found = [Rule(p.path, endpoint=p.endpoint, methods=[p.method]) for p in pages]
        return found + [Rule(path, endpoint="static", methods=["GET"]) for path in STATIC_PATHS]
    return shared_map("web", rules)
