"""Talking to the server: the injected environment, one requests session, failures as exceptions.

Every failure the user can cause or meet becomes a `ClientError` carrying
its exit status and one line for stderr; nothing else leaves this module
for an expected problem.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import uuid
from dataclasses import dataclass, field
from typing import IO, Mapping
from urllib.parse import quote, urljoin

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from .client_status import ExitStatus, http_status_to_exit_status

DEFAULT_URL = "http://127.0.0.1:8042"
TIMEOUT = 30  # seconds, for connecting and for each answer
API = "/api/v1"
PROBLEM = "urn:lablease:problem:"  # how every problem type of a lablease server starts (api/errors.py)
HIDDEN = "(the token, hidden)"


@dataclass
class Environment:
    """What the command line touches outside itself; tests pass their own."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stdin: IO = field(default_factory=lambda: sys.stdin)
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)


class ClientError(Exception):
    """An expected failure: `message` is the line shown after `lablease: `."""

    def __init__(self, message: str, status: ExitStatus = ExitStatus.ERROR, problem: dict | None = None,
                 outcome=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.problem = problem or {}
        self.outcome = outcome  # shown on stdout before the error line (a submitted job's id matters)


class Terminated(BaseException):
    """SIGTERM (what CI sends to cancel a job) or SIGHUP (its terminal or ssh session gone), raised where the
    command is, as Ctrl-C raises KeyboardInterrupt: a wait can clean up after itself and say so before the
    command exits 143 (129)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)
        self.signum = signum


# The signals that stop a command as Ctrl-C does: each raises Terminated while the command runs.
STOPPING = (signal.SIGTERM, signal.SIGHUP)
STOPPED = {signal.SIGINT: ("interrupted", ExitStatus.INTERRUPTED),
           signal.SIGTERM: ("terminated", ExitStatus.TERMINATED),
           signal.SIGHUP: ("hung up", ExitStatus.HUNG_UP)}


def stopped(stop: BaseException) -> tuple[str, ExitStatus]:
    """("interrupted", 130) for Ctrl-C, ("terminated", 143) for SIGTERM, ("hung up", 129) for SIGHUP."""
    return STOPPED[stop.signum if isinstance(stop, Terminated) else signal.SIGINT]


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # only it may set signal handlers


@contextlib.contextmanager
def sigterm_raises():
    """While the command runs, SIGTERM and SIGHUP raise Terminated (Python's default would end it silently)."""
    if not _main_thread():
        yield
        return

    def terminate(signum, _frame):
        raise Terminated(signum)
    previous = {number: signal.signal(number, terminate) for number in STOPPING}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextlib.contextmanager
def signals_held():
    """A clean-up that must finish (leaving the line) is not cut short by a second Ctrl-C or SIGTERM."""
    if not _main_thread():
        yield
        return
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in (signal.SIGINT, *STOPPING)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def segment(value) -> str:
    """A path segment, escaped (fqdns and names go into URLs as typed)."""
    return quote(str(value), safe="")


def new_request_id() -> str:
    """The request id of a create the user gave none for: a retry with it never makes a second object."""
    return f"lablease-{uuid.uuid4().hex}"


def once_more(methods) -> HTTPAdapter:
    """An adapter that sends a request once more, on a fresh connection, when its connection was reset or
    closed under it: a kept-alive connection the server closes (its keep-alive ran out, docs/deployment.md)
    just as the next request goes out. Only for requests that may arrive twice (`methods`; None: any)."""
    return HTTPAdapter(max_retries=Retry(total=1, connect=1, read=1, status=0, other=0, allowed_methods=methods,
                                         raise_on_status=False, respect_retry_after_header=False))


class Api:
    """JSON requests under /api/v1 with the caller's token.

    Two sessions: reads (GET and the other idempotent methods) are sent once more on a reset connection;
    a POST or PATCH only when the caller says it may arrive twice (`idempotent`: a create with its
    request id, a heartbeat)."""

    def __init__(self, url: str, token: str | None, debug_stream: IO[str] | None = None):
        self.url = check_url(url)
        self.token = check_token(token)
        self.debug_stream = debug_stream
        self.session = self._session(Retry.DEFAULT_ALLOWED_METHODS)
        self.repeatable = self._session(None)
        # A command that creates (--request-id, cli/client.py): each of its POSTs carries an Idempotency-Key made
        # from it (the first the id itself, then ID.2, ID.3 ...: the same command again sends the same keys).
        self.request_id: str | None = None
        self.posts = 0

    def _session(self, methods) -> requests.Session:
        session = requests.Session()
        session.headers["Accept"] = "application/json"
        session.headers["User-Agent"] = "lablease-cli"
        if self.token:
            session.headers["Authorization"] = f"Bearer {self.token}"
        else:
            session.auth = negotiate()
        for scheme in ("http://", "https://"):
            session.mount(scheme, once_more(methods))
        return session

    def close(self) -> None:
        self.session.close()
        self.repeatable.close()

    def get(self, path: str, params: dict | None = None):
        return self.request("GET", path, params=params)

    def post(self, path: str, body: dict | None = None, idempotent: bool = False):
        return self.request("POST", path, json=body if body is not None else {}, idempotent=idempotent)

    def post_raw(self, path: str, data: bytes, content_type: str, params: dict | None = None,
                 idempotent: bool = False):
        """POST a body as it is (job XML or JSON read from a file)."""
        return self.request("POST", path, data=data, headers={"Content-Type": content_type}, params=params,
                            idempotent=idempotent)

    def keyed(self, method: str, idempotent: bool, kwargs: dict) -> str | None:
        """The Idempotency-Key this request carries (set in kwargs' headers), or None. A request that is idempotent
        already (a create sent with its request_id, a heartbeat) needs none."""
        if method != "POST" or idempotent or self.request_id is None:
            return None
        self.posts += 1
        key = self.request_id if self.posts == 1 else f"{self.request_id}.{self.posts}"
        kwargs["headers"] = {**kwargs.get("headers", {}), "Idempotency-Key": key}
        return key

    def patch(self, path: str, body: dict):
        return self.request("PATCH", path, json=body)

    def delete(self, path: str, params: dict | None = None):
        return self.request("DELETE", path, params=params)

    def get_all(self, path: str, params: dict | None = None) -> list:
        """Every entry of a list, following its pages (the Link header's rel="next") to the end."""
        entries, response = [], self.send("GET", self.url + API + path, params=params)
        while True:
            entries += decode(response)
            following = response.links.get("next", {}).get("url")
            if not following:
                return entries
            response = self.send("GET", urljoin(response.url, following))

    def request(self, method: str, path: str, **kwargs):
        """The decoded JSON answer (None for 204), or ClientError."""
        return decode(self.send(method, self.url + API + path, **kwargs))

    def get_text(self, path: str) -> str:
        """A GET whose answer is not JSON (a job's XML), as text; or ClientError."""
        return self.send("GET", self.url + API + path).text

    def send(self, method: str, target: str, idempotent: bool = False, **kwargs):
        """The answer to one request, or ClientError for a failure."""
        if kwargs.get("params"):
            kwargs["params"] = {k: v for k, v in kwargs["params"].items() if v is not None}
        keyed = self.keyed(method, idempotent, kwargs)
        session = self.repeatable if idempotent or keyed else self.session
        # sent with a key, it may have been done although no answer came: the same command with the same id says
        retry = (f"; it may have been done: the same command with --request-id {self.request_id} answers it and "
                 "never does it again") if keyed else ""
        try:
            response = session.request(method, target, timeout=TIMEOUT, **kwargs)
        except requests.ConnectionError as error:
            raise ClientError(f"cannot reach the server at {self.url}: {connection_reason(error)}{retry}",
                              ExitStatus.UNREACHABLE) from error
        except requests.Timeout as error:
            raise ClientError(f"no answer from the server at {self.url} within {TIMEOUT} s{retry}",
                              ExitStatus.UNREACHABLE) from error
        self.trace(method, response)
        if response.status_code >= 400:
            raise self.failure(method, response)
        return response

    def trace(self, method: str, response) -> None:
        if self.debug_stream is not None:
            print(f"debug: {method} {response.url} -> {response.status_code}", file=self.debug_stream)

    def failure(self, method: str, response) -> ClientError:
        problem = problem_of(response)
        kind = str(problem.get("type") or "")
        if response.status_code == 404 and not kind.startswith(PROBLEM):
            # Not a lablease server's answer (a proxy's or another site's page): the address is wrong,
            # whatever object was asked for.
            return ClientError(f"the server at {self.url} does not look like a lablease server ({method} "
                               f"{without_query(response.url)} answered 404 without a lablease problem); "
                               f"{URL_HINT}", ExitStatus.USAGE, problem)
        detail = problem.get("detail") or problem.get("title") or response.reason or "error"
        if response.status_code == 401:
            detail += "" if self.token else " (set LABLEASE_TOKEN or pass --token; or kinit, where the server " \
                                             "takes Kerberos)"
        if response.status_code >= 500:
            detail = f"server error {response.status_code}: {detail}"
        if kind == PROBLEM + "no-such-path":
            detail = f"the server at {self.url} has no such API path ({detail}); {URL_HINT}"
        return ClientError(detail, http_status_to_exit_status(response.status_code, kind), problem)


URL_HINT = f"LABLEASE_URL (or --url) is the lablease server's address, e.g. {DEFAULT_URL}"


def without_query(url: str) -> str:
    return url.split("?", 1)[0]


def check_url(url: str) -> str:
    """The server's address; `.../api/v1` is taken for the address it is under (the collection does the same)."""
    if not url.startswith(("http://", "https://")):
        raise ClientError(f"the server URL must start with http:// or https://, not {url!r} "
                          "(LABLEASE_URL or --url)", ExitStatus.USAGE)
    url = url.rstrip("/")
    return url[:-len(API)] if url.endswith(API) else url


def negotiate():
    """Without a token: Kerberos, when the server asks for it (a 401 offering Negotiate) and the user has a
    ticket (kinit); requests-gssapi answers with a token for HTTP/<the server's host>. None without the
    package. A failure (no ticket) leaves the 401 as it was: the CLI then says how to sign in."""
    try:
        from requests_gssapi import HTTPSPNEGOAuth
    except ImportError:  # pragma: no cover - a dependency; a trimmed install still takes tokens
        return None
    logging.getLogger("requests_gssapi").setLevel(logging.CRITICAL)  # it logs a missing ticket as a traceback
    return HTTPSPNEGOAuth()


def check_token(token: str | None) -> str | None:
    """The token without the white space around it (a CI secret file ends in a newline); one that still
    holds a space or a control character is refused without being shown (an error must never print it)."""
    token = (token or "").strip()
    if not token:
        return None
    if not (token.isascii() and token.isprintable()) or any(c.isspace() for c in token):
        raise ClientError("the token (--token or LABLEASE_TOKEN) holds a space, a control or a non-ASCII "
                          "character, which no lablease token has; it is not shown here", ExitStatus.USAGE)
    return token


def hide(text: str, secrets) -> str:
    """Text with every secret in it replaced: the last guard of every line the command line prints."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, HIDDEN)
    return text


def decode(response):
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError as error:
        raise ClientError(f"the server at {without_query(response.url)} did not answer with JSON "
                          f"(HTTP {response.status_code}), as a lablease server does; {URL_HINT}",
                          ExitStatus.USAGE) from error


def problem_of(response) -> dict:
    """The problem+json body, or {} when the answer is something else (a proxy's page)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def connection_reason(error: Exception) -> str:
    """The innermost OS-level reason ('Connection refused'), not urllib3's wrapping."""
    seen: set[int] = set()
    stack = [error]
    best = None
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            best = current.strerror
        linked = [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
        stack.extend(link for link in linked if isinstance(link, BaseException))
    return (best or type(error).__name__).rstrip(".")
