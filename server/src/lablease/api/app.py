"""The WSGI application: match a route, check input, run the view in one transaction."""
from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Callable

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import configure_mappers
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from ..config import Settings
from ..domain import errors as domain_errors
from ..domain.errors import DomainError, Invalid, Unauthenticated
from ..domain import idempotency
from ..domain.paging import PageRequest
from ..services.records import idempotency as idempotency_records
from ..services.auth import kerberos, signin
from ..services.people.token_cache import TokenCache
from ..services.people.users import authenticate
from ..store.auth_stamp import stamp_path
from ..store.secrets import SecretBox, use_secrets
from ..store.db import Database
from ..store.outage import outage, reason
from ..services.handlers import unit_of_work
from ..store.wakeup import Waker
from . import errors
from ..domain.paging import Page
from .inputs import check_body, merge_force, next_link, page_request, query_value, read_body, read_json
from .monitoring import ROUTE_KEY, Observed
from .routes import ROUTES, Route, shared_map
from .views.context import Context, Reply
from .views.batch import BATCH_VIEW

log = logging.getLogger("lablease.api")


class NoSuchPath(domain_errors.NotFound):
    """404 `urn:lablease:problem:no-such-path`: no route has this path (clients tell a wrong address by it)."""


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class LabLeaseApp:
    """One instance per process; holds no per-request state."""

    def __init__(self, settings: Settings, db: Database, clock: Callable[[], datetime] = utcnow):
        self.settings = settings
        self.db = db
        use_secrets(db, SecretBox(settings))
        self.clock = clock
        self.waker = Waker(db)
        self.tokens = TokenCache(settings.token_cache_seconds, stamp_path(db.writer))
        self.routes = {route.endpoint: route for route in ROUTES}
        self.url_map = api_map()
        from ..web.app import WebPages  # here: web/ uses api's converters, errors and parsers

        self.web = WebPages(self)  # the HTML pages (web/), asked first; API paths are never pages
        from ..beaker.hub import BeakerHub  # here: beaker/ uses api's error table and body reader

        self.beaker = BeakerHub(self)  # Beaker's hub protocol at /bkr (beaker/), before the pages

    def __call__(self, environ, start_response):
        request = Request(environ)
        request.max_content_length = self.settings.max_body_bytes
        return self.handle(request)(environ, start_response)

    def handle(self, request: Request) -> Response:
        hub = self.beaker.handle(request)  # None for every path outside /bkr
        if hub is not None:
            return hub
        page = None if request.path.startswith("/api/") else self.web.handle(request)  # API paths are never pages
        if page is not None:
            return page
        try:
            rule, args = self.match(request)
            request.environ[ROUTE_KEY] = rule.rule  # requests are counted by rule, never by raw path
            return self.run(self.routes[rule.endpoint], request, args)
        except Unauthenticated as error:
            log.warning("authentication refused: %s", error.detail)  # who tries tokens that do not work
            response = errors.from_domain(error)
            if kerberos.configured(self.settings):  # a client with a Kerberos ticket answers this challenge
                response.headers.add("WWW-Authenticate", kerberos.SCHEME)
            return response
        except DomainError as error:
            return errors.from_domain(error)
        except HTTPException as error:
            return errors.from_http(error)
        except Exception as error:  # noqa: BLE001 - answer problem+json, never HTML or a traceback
            found = outage(error)
            if found is None:  # a bug
                return errors.unexpected(request)
            # The database failed, not this request: nothing was committed, the same request will work later.
            log.warning("%s answering %s %s: %s", found.title.lower(), request.method, request.path, reason(error))
            return errors.unavailable(found)

    def match(self, request: Request):
        """(rule, arguments); a path that no route has is told apart from one naming no object (a client's
        address with a wrong prefix, e.g. `.../api/v1` twice, must not read "no system named ...")."""
        try:
            return self.url_map.bind_to_environ(request.environ).match(return_rule=True)
        except NotFound as error:
            if error.description != NotFound.description:  # a converter's own: an id or name that cannot be
                raise
            raise NoSuchPath(f"no API path {request.path} on this lablease server (its API is under "
                             f"/api/v1/)") from None

    def run(self, route: Route, request: Request, args: dict) -> Response:
        # Read the bounded body (413 past the limit) before the transaction: on SQLite a
        # writing transaction holds the database, and a slow upload must not hold it too.
        data = read_body(request, self.settings.max_body_bytes) if (route.body is not None or route.raw) else b""
        key = request.headers.get(idempotency.HEADER) if route.method == "POST" and route.auth else None
        # Kerberos (Authorization: Negotiate) is checked before the transaction: its user may first be read
        # from the directory (services/auth/kerberos.py).
        negotiate = kerberos.offered(self.settings, request.headers.get("Authorization")) if route.auth else None
        signed = kerberos.sign_in(self.db, self.settings, negotiate, self.clock()) if negotiate else None
        # A list may read a standby (database_read_url): it may be a moment behind; one item is read where it is
        # written, so a client reading what it just made finds it.
        with unit_of_work(self.db, self.settings, self.waker, write=route.writes, read_first=route.read_first,
                          replica=route.paged) as uow:
            now = self.clock()
            # Who is asking comes first: an anonymous caller learns nothing about its input.
            if signed is not None:
                actor = kerberos.actor_of(uow, *signed)
            else:
                actor = authenticate(uow, request.headers.get("Authorization"), now, self.tokens) \
                    if route.auth else None
            query, body = self.query(route, request), self.body(route, request, data)
            force = merge_force(query, body)  # in the query string or the JSON body
            ctx = Context(uow, actor, now, self.settings, args, body, query, raw=data, mimetype=request.mimetype,
                          page=page_request(query), force=force, headers=request.headers)
            ctx.call = lambda method, path, sub_query, sub_body: self.call(ctx, method, path, sub_query, sub_body)
            # ?validate_only=true: the same work, rolled back where it would commit (store/uow.py)
            uow.validate_only = route.writes and bool(query.get("validate_only"))
            asked = self.idempotent(route, request, ctx, key, data)
            if asked is not None and (first := idempotency_records.find(uow, actor.id, key)) is not None:
                return replayed(key, asked, first)
            try:
                result = route.view(ctx)
                response = self.reply(route, result, request)
                if asked is not None and not uow.validate_only:  # kept with the writes: both or neither
                    idempotency_records.keep(uow, actor.id, key, asked, response.status_code,
                                             response.mimetype, response.get_data(as_text=True), now)
                if route.writes:
                    uow.commit()
            except IntegrityError as error:
                # The schema's own guards (unique names, the exclusion constraint) caught a race: when it was a
                # request sent twice at once with one key, the one that lost answers with the one that won.
                log.info("integrity error on %s: %s", route.endpoint, error.orig)
                if asked is not None and (first := self.first_answer(actor.id, key, asked)) is not None:
                    return first
                return errors.problem(409, "Conflict", errors.integrity_detail(error), "conflict")
        if uow.validate_only:  # says the server applied it: a server that did not would have kept the change
            response.headers["Validate-Only"] = "true"
        if signed is not None and signed[0].reply:  # mutual authentication: the server proves it holds the key
            response.headers["WWW-Authenticate"] = f"{kerberos.SCHEME} {signed[0].reply}"
        return response

    @staticmethod
    def idempotent(route: Route, request: Request, ctx: Context, key: str | None,
                   data: bytes) -> idempotency.Asked | None:
        """The request as its Idempotency-Key remembers it, or None when it is sent without one. A route with its own
        request_id (reserve, job submission: docs/api.md) takes the key as that id and keeps its own rule."""
        if key is None:
            return None
        key = idempotency.check_key(key)
        if "request_id" in ctx.query or "request_id" in route.query:
            ctx.query["request_id"] = idempotency.own_request_id(ctx.query.get("request_id"), key)
            return None
        if "request_id" in (route.body or {}).get("properties", {}):
            ctx.body["request_id"] = idempotency.own_request_id(ctx.body.get("request_id"), key)
            return None
        path = request.full_path.rstrip("?")
        return idempotency.Asked(route.method, path, idempotency.body_hash(data, is_json=not route.raw))

    def first_answer(self, user_id: int, key: str, asked: idempotency.Asked) -> Response | None:
        """The answer kept for the key by the request that won, in a transaction of its own (this one failed)."""
        with unit_of_work(self.db, self.settings, write=False) as uow:
            first = idempotency_records.find(uow, user_id, key)
            return replayed(key, asked, first) if first is not None else None

    def call(self, ctx: Context, method: str, path: str, query: dict, body) -> tuple[int, object]:
        """(status, answer) of one writing JSON route run in ctx's unit of work (POST /batch), or a refusal."""
        try:
            rule, args = self.url_map.bind("lablease").match(path.split("?")[0], method=method, return_rule=True)
        except HTTPException:
            raise Invalid("path", f"{method} {path} is not a route of this API") from None
        route = self.routes[rule.endpoint]
        if not route.writes or route.raw or not route.auth or route.view is BATCH_VIEW:
            raise Invalid("path", f"{method} {rule.rule} cannot be part of a batch (only writes with JSON bodies "
                                  "that need a token)")
        unknown = sorted(set(query) - set(route.query) | ({"validate_only"} & set(query)))
        if unknown:
            raise Invalid("query", f"{method} {rule.rule} does not take {', '.join(unknown)} in a batch")
        parsed = {name: query_value(route.query[name][0], name, _query_text(value)) for name, value in query.items()}
        if route.body is None and body is not None:
            raise Invalid("body", f"{method} {rule.rule} takes no body")
        data = check_body({} if body is None else body, route.body) if route.body is not None else {}
        force = merge_force(parsed, data)
        sub = Context(ctx.uow, ctx.actor, ctx.now, self.settings, args, data, parsed, page=PageRequest(), force=force)
        result, status = route.view(sub), route.status
        if isinstance(result, Reply):
            result, status = result.body, result.status
        return status, (None if status == 204 else result)

    @staticmethod
    def body(route: Route, request: Request, data: bytes) -> dict:
        if route.body is None:
            return {}
        return check_body(read_json(request, data), route.body)

    @staticmethod
    def query(route: Route, request: Request) -> dict:
        # An empty string filter is no filter; an empty time, boolean or number is refused (it is none of those).
        return {name: query_value(kind, name, request.args[name])
                for name, (kind, _) in route.query.items()
                if name in request.args and (kind != "str" or request.args[name] != "")}

    @staticmethod
    def reply(route: Route, result, request: Request) -> Response:
        status = route.status
        if isinstance(result, Response):  # e.g. a kickstart, as text
            return result
        if isinstance(result, Page):  # a list: the body stays a list, the next page is in the Link header
            headers = {"Link": next_link(request, result.next_after)} if result.next_after else {}
            return Response(json.dumps(result.items), status=status, mimetype="application/json", headers=headers)
        if isinstance(result, Reply):
            result, status = result.body, result.status
        if status == 204:
            return Response(status=204)
        return Response(json.dumps(result), status=status, mimetype="application/json")


def replayed(key: str, asked: idempotency.Asked, first) -> Response:
    """The answer kept for the key, sent again (Idempotent-Replayed: true); 409 when the key was another request's."""
    idempotency.refuse_reused(key, idempotency.differences(idempotency_records.asked(first), asked))
    return Response(first.answer or None, status=first.status, mimetype=first.mimetype,
                    headers={idempotency.REPLAYED: "true"})


def _query_text(value) -> str:
    """A batch request's query value (JSON) as it would be written in a query string."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def api_map():
    return shared_map("api", lambda: [Rule(r.path, endpoint=r.endpoint, methods=[r.method]) for r in ROUTES])


def preload() -> None:
    """Build what every application of this process shares: `serve` calls it before it forks its request
    workers, which then inherit it instead of each building it (~0.7 s of CPU a worker): the pages' and
    the hub's modules, the three URL maps, and the sign-in's dummy hash (argon2id)."""
    from ..beaker import registry
    from ..web.app import WebPages  # noqa: F401 - imported for what it imports
    from ..web.pages import PAGES, url_map

    configure_mappers()
    api_map()
    url_map(PAGES)
    registry.url_map()
    signin.dummy_hash()


def create_app(settings: Settings | None = None, db: Database | None = None,
               clock: Callable[[], datetime] = utcnow) -> Observed:
    """The whole application, observed: request ids, request metrics and /metrics around it."""
    configure_mappers()  # once, now, rather than by whichever request thread comes first
    settings = settings or Settings()
    db = db or Database(settings.database, settings.database_read_url)
    return Observed(LabLeaseApp(settings, db, clock))

