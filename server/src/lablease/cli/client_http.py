"""Talking to the server: the injected environment, one requests session, failures as exceptions.

Every failure the user can cause or meet becomes a `ClientError` carrying
its exit status and one line for stderr; nothing else leaves this module
for an expected problem.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import IO, Mapping
from urllib.parse import quote, urljoin

import requests

from .client_status import ExitStatus, http_status_to_exit_status

DEFAULT_URL = "http://127.0.0.1:8042"
TIMEOUT = 30  # seconds, for connecting and for each answer
API = "/api/v1"


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


def segment(value) -> str:
    """A path segment, escaped (fqdns and names go into URLs as typed)."""
    return quote(str(value), safe="")


class Api:
    """JSON requests under /api/v1 with the caller's token."""

    def __init__(self, url: str, token: str | None, debug_stream: IO[str] | None = None):
        self.url = check_url(url)
        self.token = token
        self.debug_stream = debug_stream
        self.session = requests.Session()
        self.session.headers["Accept"] = "application/json"
        self.session.headers["User-Agent"] = "lablease-cli"
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self.session.close()

    def get(self, path: str, params: dict | None = None):
        return self.request("GET", path, params=params)

    def post(self, path: str, body: dict | None = None):
        return self.request("POST", path, json=body if body is not None else {})

    def post_raw(self, path: str, data: bytes, content_type: str):
        """POST a body as it is (job XML or JSON read from a file)."""
        return self.request("POST", path, data=data, headers={"Content-Type": content_type})

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

    def send(self, method: str, target: str, **kwargs):
        """The answer to one request, or ClientError for a failure."""
        if kwargs.get("params"):
            kwargs["params"] = {k: v for k, v in kwargs["params"].items() if v is not None}
        try:
            response = self.session.request(method, target, timeout=TIMEOUT, **kwargs)
        except requests.ConnectionError as error:
            raise ClientError(f"cannot reach the server at {self.url}: {connection_reason(error)}",
                              ExitStatus.UNREACHABLE) from error
        except requests.Timeout as error:
            raise ClientError(f"no answer from the server at {self.url} within {TIMEOUT} s",
                              ExitStatus.UNREACHABLE) from error
        self.trace(method, response)
        if response.status_code >= 400:
            raise self.failure(response)
        return response

    def trace(self, method: str, response) -> None:
        if self.debug_stream is not None:
            print(f"debug: {method} {response.url} -> {response.status_code}", file=self.debug_stream)

    def failure(self, response) -> ClientError:
        problem = problem_of(response)
        detail = problem.get("detail") or problem.get("title") or response.reason or "error"
        if response.status_code == 401:
            detail += "" if self.token else " (set LABLEASE_TOKEN or pass --token)"
        if response.status_code >= 500:
            detail = f"server error {response.status_code}: {detail}"
        return ClientError(detail, http_status_to_exit_status(response.status_code), problem)


def check_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ClientError(f"the server URL must start with http:// or https://, not {url!r} "
                          "(LABLEASE_URL or --url)", ExitStatus.USAGE)
    return url.rstrip("/")


def decode(response):
    if response.status_code == 204 or not response.content:
        return None
    try:
        return response.json()
    except ValueError as error:
        raise ClientError(f"the server at {response.url} did not answer with JSON "
                          f"(HTTP {response.status_code}); is LABLEASE_URL a lablease server?") from error


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
