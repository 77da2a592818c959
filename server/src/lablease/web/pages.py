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
from .views import account, advance, calendar, jobs, labs, pools, reservations, systems, utilisation


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
    Page("GET", "/labs", labs.listing),
    Page("GET", "/utilisation", utilisation.show),
    Page("GET", "/utilisation.csv", utilisation.csv),
    Page("GET", "/calendar/<user>/<token>.ics", calendar.feed, auth=False),
]

# Item 11, no page-only feature: each page and form action, the API route that does the same (its endpoint in
# api/routes.py) and a `lablease` command line that does it (tests/server/web/test_pages.py parses each).
# Signing in and out is the pages' own session (the API and CLI use tokens); a view without a command says None.
API = "/api/v1"
EQUIVALENTS = {
    "GET /systems": ("GET " + API + "/systems", "systems --pool rack"),
    "GET /systems/<fqdn>": ("GET " + API + "/systems/<fqdn>", "system show s1.lab.test"),
    "POST /systems/<fqdn>/take": ("POST " + API + "/reservations", "reserve s1.lab.test --duration 4h"),
    "POST /systems/<fqdn>/borrow": ("POST " + API + "/systems/<fqdn>/loan", "loan grant s1.lab.test alice --limited"),
    "POST /systems/<fqdn>/return-loan": ("DELETE " + API + "/systems/<fqdn>/loan", "loan return s1.lab.test"),
    "GET /reservations": ("GET " + API + "/reservations", "reservations"),
    "POST /reservations": ("POST " + API + "/reservations", "reserve s1.lab.test --duration 1d"),
    "POST /reservations/<int:id>/extend": ("PATCH " + API + "/reservations/<int:id>", "extend 7 --by 1h"),
    "POST /reservations/<int:id>/return": ("DELETE " + API + "/reservations/<int:id>", "return 7"),
    "POST /calendar/rotate": ("POST " + API + "/me/calendar", "calendar-url --new"),
    "GET /calendar/<user>/<token>.ics": ("GET " + API + "/me/calendar", "calendar-url"),
    "GET /pools": ("GET " + API + "/pools", "pools"),
    "GET /pools/<name>": ("GET " + API + "/pools/<name>/timeline", "pool show rack"),
    "GET /queue": ("GET " + API + "/queue", "queue"),
    "GET /jobs": ("GET " + API + "/jobs", "jobs"),
    "GET /jobs/<int:id>": ("GET " + API + "/jobs/<int:id>", "job status 3"),
    "POST /jobs/<int:id>/cancel": ("POST " + API + "/jobs/<int:id>/cancel", "job cancel 3"),
    "GET /advance-reservations": ("GET " + API + "/advance-reservations", "ar list"),
    "POST /advance-reservations": ("POST " + API + "/advance-reservations",
                                   "ar create -a 2026-11-23T08:00:00Z -d 2h --host s1.lab.test --validate"),
    "GET /advance-reservations/<ident>": ("GET " + API + "/advance-reservations/<ident>", "ar show 4"),
    "POST /advance-reservations/<ident>/modify": ("PATCH " + API + "/advance-reservations/<ident>",
                                                  "ar modify 4 -N renamed"),
    "POST /advance-reservations/<ident>/delete": ("DELETE " + API + "/advance-reservations/<ident>",
                                                  "ar delete 4 -f"),
    "GET /labs": ("GET " + API + "/labs", "labs"),
    "GET /utilisation": ("GET " + API + "/reports/utilisation/series", None),
    "GET /utilisation.csv": ("GET " + API + "/reports/utilisation/series", None),
}
SESSION_ONLY = ("GET /", "GET /login", "POST /login", "POST /logout")

# The navigation of layout.html: (label, path). A page not built yet answers 404.
NAV = [
    ("Systems", "/systems"),
    ("Pools", "/pools"),
    ("My reservations", "/reservations"),
    ("Queue", "/queue"),
    ("Jobs", "/jobs"),
    ("Advance reservations", "/advance-reservations"),
    ("Labs", "/labs"),
    ("Utilisation", "/utilisation"),
]

STATIC_PATHS = ("/static/<path:name>", "/favicon.ico")


def url_map(pages: list[Page]) -> Map:
    def rules() -> list[Rule]:
        found = [Rule(p.path, endpoint=p.endpoint, methods=[p.method]) for p in pages]
        return found + [Rule(path, endpoint="static", methods=["GET"]) for path in STATIC_PATHS]
    return shared_map("web", rules)
