# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one HTTP client of the lablease.lab collection.

Every module and the inventory plugin talk to the server through `Client`:
authentication, timeouts, retries with backoff (idempotent calls only) and
errors turned into one sentence a person can act on (`LableaseError`).

Check mode: a module's client has ``validate_only`` set, and every write it sends
carries ``?validate_only=true``: the server does all it would (every check, the
database's too), answers what it would have made, and keeps nothing. A task that
needs several writes sends them as one `Batch` (``POST /batch``), which the server
applies in one transaction: all of them or none, in check mode and out of it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import socket
import time
import uuid
from http.client import HTTPException
from urllib.error import HTTPError, URLError
from urllib.parse import quote, urlencode, urljoin

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.module_utils.urls import open_url

API_PREFIX = "/api/v1"
PROBLEM = "urn:lablease:problem:"  # how every problem type of a lablease server starts
RETRY_STATUSES = (502, 503, 504)
IDEMPOTENT_METHODS = ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")
LINK = re.compile(r'<([^>]*)>[^,]*?;\s*rel="?([^",;]*)"?')  # one entry of a Link header: <url>; rel="next"

# The connection options every module accepts (documented once in doc_fragments/api.py).
API_ARGUMENT_SPEC = dict(
    url=dict(type="str", fallback=(env_fallback, ["LABLEASE_URL"])),
    token=dict(type="str", no_log=True, fallback=(env_fallback, ["LABLEASE_TOKEN"])),
    validate_certs=dict(type="bool", default=True),
    timeout=dict(type="int", default=30),
    retries=dict(type="int", default=3),
)


def clean_token(token):
    """The token without the white space around it (a CI secret file ends in a newline); refused, never
    shown, when it still holds a space or a control character (no lablease token does)."""
    token = to_text(token or "").strip()
    if not token:
        raise LableaseError("no lablease API token: set the token option or LABLEASE_TOKEN "
                            "(an administrator creates one with `lablease-server token create USER`)")
    if any(c.isspace() or ord(c) < 32 or ord(c) > 126 for c in token):
        raise LableaseError("the lablease API token (option token or LABLEASE_TOKEN) holds a space, a control "
                            "or a non-ASCII character, which no lablease token has; it is not shown here")
    return token


def next_link(header):
    """The URL of an RFC 8288 Link header's rel="next" entry, or None."""
    for match in LINK.finditer(header or ""):
        if "next" in match.group(2).split():
            return match.group(1)
    return None


def api_argument_spec(**specific):
    """The connection options plus a module's own."""
    spec = dict((key, dict(value)) for key, value in API_ARGUMENT_SPEC.items())
    spec.update(specific)
    return spec


class LableaseError(Exception):
    """A failed call, with a message for a person and the HTTP details for code."""

    def __init__(self, message, status=None, problem=None, url=None):
        super(LableaseError, self).__init__(message)
        self.message = message
        self.status = status
        self.problem = problem or {}
        self.url = url


def problem_message(status, problem, method, url):
    """One sentence from an application/problem+json answer."""
    conflict = problem.get("conflict") if isinstance(problem, dict) else None
    if isinstance(conflict, dict) and conflict.get("resource"):
        who = " by %s" % conflict["user"] if conflict.get("user") else " by another user"
        until = conflict.get("end") or "further notice"  # as the server writes times
        text = "%s is reserved%s until %s" % (conflict["resource"], who, until)
        return text
    detail = problem.get("detail") if isinstance(problem, dict) else None
    title = problem.get("title") if isinstance(problem, dict) else None
    text = detail or title or "HTTP %s" % status
    if status == 401:
        return ("the lablease server at %s refused the token (%s): set a valid token "
                "(option token or LABLEASE_TOKEN); expired or revoked tokens are refused" % (url, text))
    if status == 403:
        return "not allowed: %s" % text
    return text


class Client:
    """Calls /api/v1 of one lablease server with one token."""

    def __init__(self, url, token, validate_certs=True, timeout=30, retries=3, backoff=0.5,
                 opener=None, sleep=None, user_agent="lablease.lab"):
        if not url:
            raise LableaseError("no lablease server URL: set the url option or LABLEASE_URL, "
                                "e.g. http://127.0.0.1:8042")
        token = clean_token(token)
        url = url.rstrip("/")
        if url.endswith(API_PREFIX):
            url = url[:-len(API_PREFIX)]
        self.url = url
        self.token = token
        self.validate_certs = validate_certs
        self.timeout = timeout
        self.retries = max(0, retries or 0)
        self.backoff = backoff
        self.open = opener or open_url
        self.sleep = sleep or time.sleep
        self.user_agent = user_agent
        self.validate_only = False  # check mode: every write is only validated by the server (nothing is kept)
        self._me = None

    # -- plumbing ---------------------------------------------------------
    def endpoint(self, path, query=None):
        target = self.url + API_PREFIX + path
        if query:
            pairs = [(k, self._query_value(v)) for k, v in sorted(query.items()) if v is not None]
            if pairs:
                target += "?" + urlencode(pairs)
        return target

    @staticmethod
    def _query_value(value):
        if isinstance(value, bool):
            return "true" if value else "false"
        return to_native(value)

    def request(self, method, path, body=None, query=None, idempotent=None, raw=None, content_type=None):
        """(status, decoded JSON or None); raises LableaseError.

        Connection errors and 502/503/504 are retried with exponential backoff,
        but only for idempotent calls (GET/PUT/DELETE, a POST the caller
        declares idempotent, such as a reservation with a request_id, or any
        other POST, which carries an Idempotency-Key of its own for it).
        ``raw`` (text or bytes) is sent as it is with ``content_type`` instead
        of ``body`` as JSON (job XML: application/xml).
        """
        method = method.upper()
        key = None
        if idempotent is None and method == "POST" and not self.validate_only:
            # a create carries an Idempotency-Key: sent again (a lost answer), the server answers it once more
            # instead of making a second object (docs/api.md, "Retrying a write")
            key, idempotent = "lablease.lab-%s" % uuid.uuid4().hex, True
        elif idempotent is None:
            idempotent = method in IDEMPOTENT_METHODS
        validating = self.validate_only and method != "GET"
        if validating:  # nothing is kept, so asking again is safe
            query, idempotent = dict(query or {}, validate_only=True), True
        response, answer = self.exchange(method, self.endpoint(path, query), body, idempotent, raw, content_type,
                                         key)
        if validating and response.headers.get("Validate-Only") != "true":
            raise LableaseError("the lablease server at %s does not know validate_only (it answered %s %s without "
                                "saying it kept nothing); check mode needs a newer server" % (self.url, method, path),
                                url=self.url)
        return response.getcode(), answer

    def batch(self):
        """A `Batch` of writes for this server, sent as one request."""
        return Batch(self)

    def exchange(self, method, target, body=None, idempotent=True, raw=None, content_type=None, key=None):
        """(response, decoded JSON or None): the server's answer to target (retried as request() says)."""
        headers = {"Authorization": "Bearer %s" % self.token, "Accept": "application/json"}
        if key is not None:
            headers["Idempotency-Key"] = key
        data = None
        if raw is not None:
            data = raw
            headers["Content-Type"] = content_type or "application/octet-stream"
        elif body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        attempts = 1 + (self.retries if idempotent else 0)
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            try:
                response = self.open(target, method=method, data=data, headers=headers,
                                     validate_certs=self.validate_certs, timeout=self.timeout,
                                     http_agent=self.user_agent, follow_redirects="safe")
                return response, self._decode(response.read())
            except HTTPError as error:
                status = error.code
                if status in RETRY_STATUSES and not last:
                    self._wait(attempt)
                    continue
                raise self._http_error(method, target, error)
            except (URLError, socket.timeout, socket.error, ConnectionError, HTTPException) as error:
                # (a kept-alive connection closed under the request: reset, or no status line at all)
                if not last:
                    self._wait(attempt)
                    continue
                reason = getattr(error, "reason", error)
                raise LableaseError(
                    "cannot reach the lablease server at %s (%s%s); check the url option or LABLEASE_URL "
                    "and that the server runs" % (self.url, to_native(reason),
                                                  ", after %d attempts" % attempts if attempts > 1 else ""),
                    url=self.url)
        raise LableaseError("unreachable")  # pragma: no cover - the loop always returns or raises

    def _wait(self, attempt):
        self.sleep(self.backoff * (2 ** (attempt - 1)))

    @staticmethod
    def _decode(raw):
        if not raw:
            return None
        text = to_text(raw, errors="surrogate_or_strict")
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            raise LableaseError("the server answered something that is not JSON: %s" % text[:200])

    def _http_error(self, method, target, error):
        problem = {}
        try:
            raw = error.read()
            if raw:
                problem = json.loads(to_text(raw, errors="surrogate_or_replace"))
        except Exception:  # noqa: BLE001 - the status alone still makes a message
            problem = {}
        if not isinstance(problem, dict):
            problem = {}
        message = problem_message(error.code, problem, method, self.url)
        kind = str(problem.get("type") or "")
        if error.code == 404 and (not kind.startswith(PROBLEM) or kind == PROBLEM + "no-such-path"):
            # another site's page, or a path the server has no route for: the url is wrong, not the object
            message = ("%s %s: the server at %s does not look like a lablease server (404 %s); set the url "
                       "option or LABLEASE_URL to its address, e.g. http://127.0.0.1:8042"
                       % (method, target.split("?", 1)[0], self.url,
                          "no such API path" if kind else "without a lablease problem"))
        return LableaseError(message, status=error.code, problem=problem, url=self.url)

    # -- helpers every module uses ------------------------------------------
    def get(self, path, query=None):
        return self.request("GET", path, query=query)[1]

    def get_all(self, path, query=None):
        """Every entry of a list: its pages, following each answer's Link rel="next" to the end."""
        entries, target = [], self.endpoint(path, query)
        while target:
            response, page = self.exchange("GET", target)
            entries.extend(page or [])
            following = next_link(response.headers.get("Link"))
            target = urljoin(target, following) if following else None
        return entries

    def get_or_none(self, path, query=None):
        """The object, or None on 404."""
        try:
            return self.get(path, query)
        except LableaseError as error:
            if error.status == 404:
                return None
            raise

    def get_listed(self, path):
        """[the object], or [] when there is none (404): what an *_info module lists when asked for one by id."""
        found = self.get_or_none(path)
        return [found] if found else []

    def me(self):
        if self._me is None:
            self._me = self.get("/me")
        return self._me

    def delete_or_none(self, path, query=None):
        """DELETE; False when it was already gone (404), True otherwise."""
        try:
            self.request("DELETE", path, query=query)
            return True
        except LableaseError as error:
            if error.status == 404:
                return False
            raise

    @staticmethod
    def quote(segment):
        return quote(to_native(segment), safe="")


class Batch:
    """Writes applied together: ``add()`` each, then ``send()`` makes one request of them.

    The server runs them in order in one transaction (POST /batch), so a task that needs several
    writes changes everything or nothing. One write goes as itself. ``send()`` returns each
    write's answer (None for 204), in order; the first refusal raises LableaseError naming it.
    """

    def __init__(self, client):
        self.client = client
        self.requests = []

    def add(self, method, path, body=None, query=None):
        entry = {"method": method.upper(), "path": API_PREFIX + path}
        if body is not None:
            entry["body"] = body
        if query:
            entry["query"] = dict((k, v) for k, v in query.items() if v is not None)
        self.requests.append(entry)
        return self

    def __len__(self):
        return len(self.requests)

    def send(self):
        if not self.requests:
            return []
        if len(self.requests) == 1:
            one = self.requests[0]
            return [self.client.request(one["method"], one["path"][len(API_PREFIX):], one.get("body"),
                                        query=one.get("query"))[1]]
        answer = self.client.request("POST", "/batch", {"requests": self.requests})[1] or {}
        return [entry.get("body") for entry in answer.get("responses") or []]


def client_from_params(params, opener=None, sleep=None):
    return Client(params.get("url"), params.get("token"), validate_certs=params.get("validate_certs", True),
                  timeout=params.get("timeout") or 30, retries=params.get("retries", 3), opener=opener, sleep=sleep)


def module_client(module):
    """A Client for an AnsibleModule, failing the module with a clear message on bad settings."""
    try:
        client = client_from_params(module.params)
    except LableaseError as error:
        module.fail_json(msg=error.message)
    client.validate_only = bool(module.check_mode)  # check mode asks the server, which keeps nothing
    return client


def list_plan(current, wanted, mode):
    """(to_add, to_remove) for a list option: mode exact, add or remove; wanted None manages nothing."""
    current = list(current or [])
    if wanted is None:
        return [], []
    wanted = list(dict.fromkeys(wanted))
    if mode == "remove":
        return [], [item for item in wanted if item in current]
    adds = [item for item in wanted if item not in current]
    removes = [item for item in current if item not in wanted] if mode == "exact" else []
    return adds, removes


def wait_until(check, timeout, sleep_seconds=2, sleep=None, clock=None):
    """Call check() until it returns something other than None, at most timeout seconds (monotonic);
    returns (value, timed_out)."""
    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    deadline = clock() + max(0, timeout)
    while True:
        value = check()
        if value is not None:
            return value, False
        if clock() >= deadline:
            return None, True
        sleep(max(0.05, min(sleep_seconds, deadline - clock())))
