"""The hub's two tables: XML-RPC methods by name ('auth.login_password') and Beaker's REST paths.

Each namespace is one module of `beaker.methods` that registers its functions with the decorators below;
`load()` imports every module of that package, so a new namespace is a new file and nothing else changes.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

from werkzeug.routing import Map, Rule

from ..api.routes import shared_map
from ..domain.errors import DomainError, Invalid


class NotSupported(DomainError):
    """What Beaker does and lablease cannot (no task library, no proxy login...): a Fault (400 in REST)
    whose text says so and why."""

    title = "Not supported"


@dataclass(frozen=True)
class Method:
    name: str
    function: Callable
    auth: bool  # needs a signed-in session (every method but the auth.login_* ones)
    writes: bool  # runs in a writing transaction, committed when the method returns


@dataclass(frozen=True)
class Route:
    method: str  # HTTP method
    path: str  # werkzeug rule under /bkr, e.g. /systems/<fqdn>/status
    function: Callable
    auth: bool
    writes: bool
    fields: dict  # the body's fields the function reads: name -> type(s), or the fields of an inner object

    def check(self, body) -> None:
        """Refuse (422, as the API refuses a body) a body that is not a JSON object, or a field the function reads
        of another type (null is absent): a method never meets a list where it reads a field, nor a number where
        it expects a name."""
        _check_object(body, self.fields, "body")


_KINDS = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}


def _check_object(body, fields: dict, where: str) -> None:
    if body is None:
        return
    if not isinstance(body, dict):
        raise Invalid(where, "send a JSON object")
    for name, kind in fields.items():
        value, path = body.get(name), f"{where}.{name}" if where != "body" else name
        if isinstance(kind, dict):
            _check_object(value, kind, path)
            continue
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if value is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            raise Invalid(path, f"must be {' or '.join(_KINDS[k] for k in kinds)}, not {json_name(value)}")


def json_name(value) -> str:
    return {bool: "true or false", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


METHODS: dict[str, Method] = {}
ROUTES: list[Route] = []


def xmlrpc(name: str, *, auth: bool = True, writes: bool = False):
    """Register `function(call, *params)` as the XML-RPC method `name`; what it returns is the answer."""
    def register(function: Callable) -> Callable:
        if name in METHODS:
            raise RuntimeError(f"XML-RPC method {name} is registered twice")
        METHODS[name] = Method(name, function, auth, writes)
        return function
    return register


def rest(method: str, path: str, *, auth: bool = True, writes: bool | None = None, fields: dict | None = None):
    """Register `function(call, **path_args)` for one of Beaker's REST paths (relative to /bkr); it returns
    JSON-able data, a `werkzeug` Response, or None (204). Anything but GET writes unless told otherwise.
    `fields`: the JSON body's fields the function reads and their types (`{"fqdn": str}`; an inner object as
    a dict of its own), checked before it runs (Route.check)."""
    def register(function: Callable) -> Callable:
        ROUTES.append(Route(method, path, function, auth, method != "GET" if writes is None else writes,
                            fields or {}))
        return function
    return register


_loaded = False


def load() -> None:
    """Import every namespace module once (they register themselves)."""
    global _loaded
    if _loaded:
        return
    from . import methods

    for found in sorted(pkgutil.iter_modules(methods.__path__), key=lambda m: m.name):
        importlib.import_module(f"{methods.__name__}.{found.name}")
    _loaded = True


def url_map() -> Map:
    load()
    return shared_map("bkr", lambda: [Rule(route.path, endpoint=index, methods=[route.method])
                                      for index, route in enumerate(ROUTES)], merge_slashes=False, converters=None)
