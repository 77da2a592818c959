"""Beaker's hub at /bkr: XML-RPC at /bkr/client/ and /bkr/RPC2, Beaker's REST paths under /bkr/.

api/app.py hands every path under /bkr here first. A request runs in one unit of work, as an API request
does; a refusal is one line (an XML-RPC Fault(1, text), or a text/plain body that bkr prints), a bug is one
line naming an error id in the server log: never a traceback.

The session is a cookie holding a lablease web session (services/auth/signin.py): sign-out (auth.logout),
`lablease-server token revoke` and disabling the user end it, as they end a web session. Only /bkr reads it,
but its Path is /: bkr's XML-RPC transport matches its cookies against the server's root URL (it asks its
cookie jar for "scheme://host/"), so a cookie with Path=/bkr would never come back with an XML-RPC call.
It has its own name (never the pages' session cookie), HttpOnly and SameSite=Strict.
A cookie-authenticated write must carry an XML-RPC or JSON content type, which no cross-site HTML form can
send; bkr's DELETEs carry no body, and a browser sends a cross-site DELETE only after a CORS preflight that
lablease never grants.
"""
from __future__ import annotations

import inspect
import json
import logging
import secrets as random

from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.wrappers import Request, Response

from ..api.errors import ERROR_STATUS, as_refusal
from ..api.inputs import read_body
from ..api.monitoring import ROUTE_KEY
from ..domain.errors import Invalid, Unauthenticated
from ..services.auth import signin
from ..services.handlers import unit_of_work
from ..store.outage import outage
from . import registry, xmlrpc
from .call import Call

log = logging.getLogger("lablease.beaker")

PREFIX = "/bkr"
XMLRPC_PATHS = ("/client", "/RPC2")
COOKIE = "lablease_bkr_session"
COOKIE_PATH = "/"  # see above: bkr sends its XML-RPC cookies only when they are scoped to the root
# The protocol lablease speaks: bkr warns when the server's major version differs from its own.
BEAKER_VERSION = "29.3"
JSON_TYPES = ("application/json",)


class BeakerHub:
    def __init__(self, app):
        self.app = app  # the LabLeaseApp: settings, database, clock, waker; its web pages' sign-in throttle
        self.map = registry.url_map()

    def handle(self, request: Request) -> Response | None:
        """The answer to a request under /bkr, or None for any other path."""
        path = request.path
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            return None
        sub = path[len(PREFIX):].rstrip("/") or "/"
        if sub in XMLRPC_PATHS:
            request.environ[ROUTE_KEY] = PREFIX + sub + "/"
            response = self.xmlrpc(request)
        else:
            response = self.rest(request, sub)
        response.headers["X-Beaker-Version"] = BEAKER_VERSION
        response.headers["Cache-Control"] = "no-store"
        return response

    # --- XML-RPC ---------------------------------------------------------------------------------------------

    def xmlrpc(self, request: Request) -> Response:
        if request.method != "POST":
            return text(405, f"XML-RPC is sent with POST to {PREFIX}/client/", {"Allow": "POST"})
        try:
            if request.mimetype not in xmlrpc.CONTENT_TYPES:
                raise Invalid("request", f"an XML-RPC request is sent as text/xml, not {sent_as(request)}")
            name, params = xmlrpc.read_call(read_body(request, self.app.settings.max_body_bytes))
            method = registry.METHODS.get(name)
            if method is None:
                raise registry.NotSupported(f"{name} is not supported by this lablease hub (docs/beaker.md lists "
                                            "what is)")
            check_params(method, params)
            call, value = self.run(request, method.function, method.auth, method.writes, params, {})
            response = Response(xmlrpc.answer(value), mimetype="text/xml")
            self.keep_session(request, response, call)
            return response
        except HTTPException as error:  # the body past max_body_bytes (413), a chunked body with no length
            return Response(xmlrpc.fault(error.description or error.name), mimetype="text/xml")
        except Exception as error:  # noqa: BLE001 - a refusal or a bug: a Fault either way, never a traceback
            return Response(xmlrpc.fault(self.refusal(request, error)), mimetype="text/xml")

    # --- REST ------------------------------------------------------------------------------------------------

    def rest(self, request: Request, sub: str) -> Response:
        try:
            endpoint, args = self.map.bind("lablease").match(sub, method=request.method)
        except MethodNotAllowed as error:
            return text(405, f"{request.method} is not allowed on {request.path}",
                        {"Allow": ", ".join(sorted(error.valid_methods or []))})
        except NotFound:
            return text(404, f"{request.path} is not a Beaker path this lablease hub serves (docs/beaker.md lists "
                             "what it does)")
        route = registry.ROUTES[endpoint]
        request.environ[ROUTE_KEY] = PREFIX + next(r.rule for r in self.map.iter_rules() if r.endpoint == endpoint)
        try:
            data = read_body(request, self.app.settings.max_body_bytes)
            if route.writes and request.method != "DELETE" and request.mimetype not in JSON_TYPES:
                raise Invalid("request", f"send the body as application/json, not {sent_as(request)}")
            body = parse_json(data) if data else None
            route.check(body)
            call, value = self.run(request, route.function, route.auth, route.writes, (), args, body)
        except HTTPException as error:
            return text(error.code or 400, error.description or error.name)
        except Exception as error:  # noqa: BLE001 - a refusal (its 4xx) or a bug (500 with an error id)
            try:
                refused = as_refusal(error)
            except Exception:  # noqa: BLE001
                found = outage(error)
                if found is not None:  # the database, not this request: as the API, 503 and when to try again
                    return text(503, self.refusal(request, error), {"Retry-After": str(found.retry_after)})
                return text(500, self.refusal(request, error))
            status = next(code for kind, code in ERROR_STATUS.items() if isinstance(refused, kind))
            return text(status, refused.detail)
        if isinstance(value, Response):
            response = value
        elif value is None:
            response = Response(status=204)
        else:
            response = Response(json.dumps(value), mimetype="application/json")
        self.keep_session(request, response, call)
        return response

    # --- shared ----------------------------------------------------------------------------------------------

    def run(self, request: Request, function, auth: bool, writes: bool, params: tuple, args: dict,
            body=None) -> tuple[Call, object]:
        settings = self.app.settings
        secret = request.cookies.get(COOKIE)
        with unit_of_work(self.app.db, settings, self.app.waker, write=writes) as uow:
            now = self.app.clock()
            actor = signin.session_actor(uow, secret, now)
            if auth and actor is None:
                raise Unauthenticated("please log in first (auth.login_password): no session, or it has ended"
                                      if not secret else "the session has ended (signed out, revoked or expired, "
                                      "or the user is disabled): log in again")
            base = (settings.public_url or request.host_url).rstrip("/") + PREFIX
            call = Call(uow, actor, now, settings, base, request.args, body, request.remote_addr or "",
                        self.app.web.signins, secret)
            value = function(call, *params, **args)
            if writes:
                uow.commit()
        return call, value

    def keep_session(self, request: Request, response: Response, call: Call) -> None:
        if call.new_session is None:
            return
        secure = request.scheme == "https" or self.app.settings.public_url.startswith("https:")
        if call.new_session:
            response.set_cookie(COOKIE, call.new_session, path=COOKIE_PATH, httponly=True, samesite="Strict",
                                secure=secure)
        else:
            response.delete_cookie(COOKIE, path=COOKIE_PATH, httponly=True, samesite="Strict", secure=secure)

    @staticmethod
    def refusal(request: Request, error: Exception) -> str:
        """The one line that says why a request failed; a bug is logged with its traceback under an id."""
        try:
            return as_refusal(error).detail
        except Exception:  # noqa: BLE001 - not a refusal
            pass
        found = outage(error)
        if found is not None:  # the database failed, not this request: nothing was committed
            return f"{found.title}: {found.detail}"
        error_id = random.token_hex(6)
        log.exception("error %s: unexpected exception answering %s %s", error_id, request.method, request.path)
        return f"an unexpected error occurred; the administrator can find it in the server log as error {error_id}"


def check_params(method: registry.Method, params: tuple) -> None:
    """Refuse a call with the wrong number of parameters as the caller's mistake, not a bug of ours."""
    try:
        inspect.signature(method.function).bind(None, *params)
    except TypeError:
        wanted = [p for p in inspect.signature(method.function).parameters.values()][1:]
        raise Invalid("params", f"{method.name}({', '.join(p.name for p in wanted)}) was sent {len(params)} "
                                "parameter(s)") from None


def sent_as(request: Request) -> str:
    return request.mimetype or "without a Content-Type"


def parse_json(data: bytes):
    try:
        return json.loads(data)
    except ValueError as error:
        raise Invalid("body", f"not JSON: {error}") from None


def text(status: int, message: str, headers: dict | None = None) -> Response:
    """A REST refusal as bkr shows it: it prints a text/plain body after the HTTP status."""
    return Response(" ".join(message.split()) + "\n", status=status, mimetype="text/plain", headers=headers)
