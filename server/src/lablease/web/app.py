"""The pages' half of the WSGI application: match a page, find who is signed in, check CSRF, run the view.

api/app.py LabLeaseApp asks `WebPages.handle` first; it answers None for every path that is not a page,
so the API's paths and answers stay exactly as they were.
"""
from __future__ import annotations

import logging
import mimetypes
import secrets as random
from html import escape
from pathlib import Path
from urllib.parse import quote

from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.utils import safe_join
from werkzeug.wrappers import Request, Response

from ..api.errors import ERROR_STATUS, as_refusal
from ..api.monitoring import ROUTE_KEY
from ..domain.errors import DirectoryUnavailable, DomainError, Invalid, Unauthenticated
from ..domain.signin import safe_next
from ..services.auth import kerberos, signin
from ..services.handlers import unit_of_work
from ..store.outage import outage, reason
from ..store.secrets import site_key
from . import security
from .context import PageContext, Redirect, Render
from .pages import NAV, PAGES, url_map
from .render import environment
from .throttle import FailedSignIns

log = logging.getLogger("lablease.web")
STATIC = Path(__file__).parent / "static"
# The pages' words for the fields their forms send, as the subject of a reason about one (domain/errors.py
# for_people): "The extension would make ..." where the API says "extend_by: would make ...".
SUBJECTS = {"extend_by": "The extension", "duration": "The duration", "start": "The start", "end": "The end",
            "count": "The number of systems", "purpose": "The purpose", "system": "The system"}
# What a page's form calls the API's force=true, on the pages whose forms offer it.
FORCE_WORDS = {"/advance-reservations/<ident>/delete": '"also abort its jobs" ticked'}


class WebPages:
    def __init__(self, app):
        self.app = app  # the LabLeaseApp: its settings, database, clock and waker
        self.pages = {page.endpoint: page for page in PAGES}
        self.map = url_map(PAGES)
        self.keys = security.Keys(site_key(app.settings))
        self.signins = FailedSignIns()
        signin.dummy_hash()  # ready before the first sign-in, which then costs what every other does

    def handle(self, request: Request) -> Response | None:
        try:
            rule, args = self.map.bind_to_environ(request.environ).match(return_rule=True)
        except NotFound:
            return None  # not a page: the API answers (a JSON 404 for unknown paths)
        except HTTPException as error:  # e.g. 405 on a page's path
            return security.protect(self.error_page(request, None, error.code or 400, error.description))
        endpoint = rule.endpoint
        request.environ[ROUTE_KEY] = rule.rule  # counted by rule in the metrics, as API requests are
        if endpoint == "static":
            return static_file(request, args.get("name", "favicon.svg"))
        try:
            response = self.run(self.pages[endpoint], request, args)
        except HTTPException as error:  # e.g. a form past max_body_bytes (413)
            response = self.error_page(request, None, error.code or 400, error.description or error.name)
        except Exception as error:  # noqa: BLE001 - a bug: a plain page with an error id, the traceback in the log
            found = outage(error)
            if found is not None:  # the database failed, not this page (a failover, a restart): 503, as the API
                log.warning("%s answering %s %s: %s", found.title.lower(), request.method, request.path,
                            reason(error))
                response = self.error_page(request, None, 503, f"{found.detail}.")
                response.headers["Retry-After"] = str(found.retry_after)
                return security.protect(response, private=True)
            error_id = random.token_hex(6)
            log.exception("error %s: unexpected exception answering %s %s", error_id, request.method, request.path)
            response = self.error_page(request, None, 500, f"An unexpected error occurred (error {error_id} in the "
                                                           "server log).")
        return security.protect(response, private=not request.path.endswith(".ics"))

    def run(self, page, request: Request, args: dict) -> Response:
        """A page; with `Authorization: Negotiate` (a browser answering the challenge below with its Kerberos
        ticket) a web session is opened first, and its cookie set on the answer."""
        negotiate = kerberos.offered(self.app.settings, request.headers.get("Authorization"))
        if not negotiate:
            return self.run_page(page, request, args, request.cookies.get(security.SESSION_COOKIE))
        try:
            secret = self.kerberos_session(negotiate)
        except (Unauthenticated, DirectoryUnavailable) as error:
            status = 503 if isinstance(error, DirectoryUnavailable) else 401
            log.warning("Kerberos sign-in refused: %s", error.detail)
            return self.error_page(request, None, status, error.detail)
        response = self.run_page(page, request, args, secret)
        self.cookie(response, request, security.SESSION_COOKIE, secret)
        return response

    def kerberos_session(self, token: str) -> str:
        settings = self.app.settings
        accepted, name = kerberos.sign_in(self.app.db, settings, token, self.app.clock())
        with unit_of_work(self.app.db, settings, self.app.waker) as uow:
            secret = kerberos.web_session(uow, self.app.clock(), accepted, name, settings.web_session_lifetime)
            uow.commit()
        return secret

    def challenge(self, request: Request) -> Response:
        """401 offering Negotiate: a browser with a Kerberos ticket for this site sends the same request again
        with it; one without shows this page, which leads on to the sign-in form at once."""
        target = escape("/login?next=" + quote(full_path(request), safe="/"))
        body = (f'<!doctype html><title>Sign in</title><meta http-equiv="refresh" content="0; url={target}">'
                f'<p><a href="{target}">Sign in</a></p>')
        return Response(body, status=401, mimetype="text/html", headers={"WWW-Authenticate": kerberos.SCHEME})

    def run_page(self, page, request: Request, args: dict, session_secret: str | None) -> Response:
        settings = self.app.settings
        writes = page.method == "POST"
        # A page that only shows may read a standby (database_read_url): it may be a moment behind.
        with unit_of_work(self.app.db, settings, self.app.waker, write=writes, replica=not writes) as uow:
            now = self.app.clock()
            actor = self.signed_in(uow, request, session_secret, now)
            if page.auth and actor is None:
                if kerberos.configured(settings) and not writes:
                    return self.challenge(request)
                if writes:
                    return self.redirect(request, "/login", "Please sign in again.", "error")
                return self.redirect(request, "/login?next=" + quote(full_path(request), safe="/"))
            seed = session_secret if actor is not None and session_secret else request.cookies.get(
                security.PRESESSION_COOKIE)
            form = request.form if writes else MultiDict()
            if writes and not self.keys.csrf_ok(seed, form.get("csrf")):
                return self.error_page(request, actor, 403, "This form has expired or was not sent from "
                                                            "lablease's own page. Reload the page and try again.")
            ctx = PageContext(uow, actor, now, settings, args, request.args, form, full_path(request), session_secret,
                              (settings.public_url or request.host_url).rstrip("/"), request.remote_addr or "",
                              self.signins)
            try:
                result = page.view(ctx)
                if writes:
                    uow.commit()
            except Exception as raised:  # noqa: BLE001 - a refusal, or a schema guard's (a 409 as in the API)
                error = as_refusal(raised)  # anything else goes on up (a bug)
                status = next(code for kind, code in ERROR_STATUS.items() if isinstance(error, kind))
                said = in_page_words(error, request.environ.get(ROUTE_KEY))
                if not writes:
                    return self.error_page(request, actor, status, said)
                # The refused action changed nothing (rolled back): back to the form's page, saying why.
                result = Redirect(safe_next(form.get("back"), "/systems"), said, "error")
        if isinstance(result, Redirect):
            return self.redirect(request, result.location, result.message, result.category, result)
        if isinstance(result, Response):  # e.g. the calendar feed, a sign-in that sets a cookie
            return result
        return self.render(request, actor, result, seed)

    def signed_in(self, uow, request: Request, session_secret: str | None, now):
        remote = request.environ.get("REMOTE_USER")
        if self.app.settings.web_trust_remote_user and remote:
            return signin.remote_actor(uow, remote)
        return signin.session_actor(uow, session_secret, now)

    def render(self, request: Request, actor, result: Render, seed: str | None) -> Response:
        response = Response(mimetype="text/html")
        if seed is None:  # first visit: a pre-session nonce the sign-in form's CSRF token is made from
            seed = security.new_nonce()
            self.cookie(response, request, security.PRESESSION_COOKIE, seed)
        flashes = self.keys.unpack_flash(request.cookies.get(security.FLASH_COOKIE))
        if flashes:
            security.clear_cookie(response, request, self.app.settings.public_url, security.FLASH_COOKIE)
        values = {"actor": actor, "csrf": self.keys.csrf(seed), "flashes": flashes, "nav": NAV,
                  "here": request.path, "now": self.app.clock(), **result.values}
        response.set_data(environment().get_template(result.template).render(values))
        response.status_code = result.status
        response.headers.update(result.headers)
        return response

    def error_page(self, request: Request, actor, status: int, detail: str) -> Response:
        seed = request.cookies.get(security.SESSION_COOKIE) or request.cookies.get(security.PRESESSION_COOKIE)
        return self.render(request, actor, Render("error.html", {"status": status, "detail": detail}, status), seed)

    def redirect(self, request: Request, location: str, message: str | None = None,
                 category: str = "info", result: Redirect | None = None) -> Response:
        response = Response(status=303, headers={"Location": location})
        if result is not None and result.session:
            self.cookie(response, request, security.SESSION_COOKIE, result.session)
        if result is not None and result.end_session:
            self.forget(response, request, security.SESSION_COOKIE)
        if message:
            self.cookie(response, request, security.FLASH_COOKIE, self.keys.pack_flash([(category, message)]))
        return response

    def cookie(self, response: Response, request: Request, name: str, value: str, max_age: int | None = None):
        security.set_cookie(response, request, self.app.settings.public_url, name, value, max_age)

    def forget(self, response: Response, request: Request, name: str) -> None:
        security.clear_cookie(response, request, self.app.settings.public_url, name)


def in_page_words(error: DomainError, page: str | None = None) -> str:
    """A refusal as a page says it: the person filled in a form, not the API's fields or query strings."""
    said = error.for_people(SUBJECTS.get(error.field)) if isinstance(error, Invalid) else error.detail
    if page in FORCE_WORDS:
        said = said.replace("force=true", FORCE_WORDS[page])
    return said


def full_path(request: Request) -> str:
    query = request.query_string.decode("latin-1")
    return request.path + ("?" + query if query else "")


def static_file(request: Request, name: str) -> Response:
    path = safe_join(str(STATIC), name if request.path != "/favicon.ico" else "favicon.svg")
    if path is None or not Path(path).is_file():
        return security.protect(Response("not found", status=404, mimetype="text/plain"), private=False)
    response = Response(Path(path).read_bytes(), mimetype=mimetypes.guess_type(path)[0] or "application/octet-stream")
    response.headers["Cache-Control"] = "public, max-age=3600"
    return security.protect(response, private=False)
