"""Clients for the chaos tests (tests/e2e/test_chaos.py): threads that reserve, extend and return across
several servers while processes are killed and the database goes away, recording every answer.

Each request has a bounded timeout (no answer in CLIENT_TIMEOUT seconds is recorded as a hang); a 503
is honoured with a short pause before the client's next request, as a well-behaved client would.
"""
from __future__ import annotations

import math
import random
import threading
import time
import uuid
from dataclasses import dataclass, field

import requests

CLIENT_TIMEOUT = 10  # seconds: a request answered later than this counts as a hang
ALLOWED = {"reserve": {201, 409, 503}, "extend": {200, 409, 503}, "return": {204, 409, 503}, "power": {202, 503}}


def rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class Call:
    server: str  # the name of the server asked
    action: str  # reserve, extend, return, power
    user: str
    body: dict | None
    sent: float  # time.time() when it left
    target: int | str | None = None  # the reservation extended or returned, the system powered
    status: int | None = None  # None: no answer
    error: str = ""  # why there was no answer
    answered: float = 0.0
    answer: dict | None = None
    headers: dict = field(default_factory=dict)


@dataclass
class Servers:
    """The servers clients may ask, by name; a server being killed is taken out first."""

    urls: dict[str, str]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pick(self, rng: random.Random) -> tuple[str, str]:
        with self.lock:
            name = rng.choice(sorted(self.urls))
            return name, self.urls[name]

    def remove(self, name: str) -> None:
        with self.lock:
            self.urls.pop(name)

    def add(self, name: str, url: str) -> None:
        with self.lock:
            self.urls[name] = url


@dataclass
class ChaosStorm:
    servers: Servers
    tokens: dict[str, str]  # user -> token
    systems: tuple[str, ...]
    clients: int = 8
    seed: int = 7
    calls: list[Call] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def acknowledged(self, action: str = "reserve") -> list[Call]:
        ok = {"reserve": 201, "extend": 200, "return": 204, "power": 202}[action]
        return [c for c in self.calls if c.action == action and c.status == ok]

    def window(self, rng: random.Random) -> dict:
        """Now or within half an hour; a third end within seconds (for the workers to expire), the rest in minutes."""
        now = math.ceil(time.time())
        start = None if rng.random() < 0.3 else now + rng.randrange(1800)
        length = rng.randint(2, 5) if rng.random() < 0.35 else 60 * rng.randint(1, 5)
        body = {"system": rng.choice(self.systems), "end": rfc3339((start or now) + length),
                "request_id": uuid.uuid4().hex}
        if start is not None:
            body["start"] = rfc3339(start)
        return body

    def send(self, session: requests.Session, rng: random.Random, user: str, mine: list[int]) -> Call:
        name, url = self.servers.pick(rng)
        roll = rng.random()
        if mine and roll < 0.2:
            call = Call(name, "extend", user, {"extend_by": "30s"}, time.time(), rng.choice(mine))
            method, path = "PATCH", f"/reservations/{call.target}"
        elif mine and roll < 0.35:
            call = Call(name, "return", user, None, time.time(), mine.pop(rng.randrange(len(mine))))
            method, path = "DELETE", f"/reservations/{call.target}"
        else:
            call = Call(name, "reserve", user, self.window(rng), time.time())
            method, path = "POST", "/reservations"
        self.ask(session, call, method, url + "/api/v1" + path)
        if call.status == 201:
            mine.append(call.answer["id"])
        return call

    def ask(self, session: requests.Session, call: Call, method: str, url: str) -> None:
        """Send the call's request and record what came back (or that nothing did)."""
        self.calls.append(call)  # list.append is atomic under the GIL
        try:
            response = session.request(method, url, json=call.body, timeout=CLIENT_TIMEOUT)
        except requests.Timeout:
            call.error = f"no answer in {CLIENT_TIMEOUT} s"
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as error:
            call.error = f"connection lost: {type(error).__name__}: {str(error)[:160]}"
        else:
            call.status, call.headers = response.status_code, dict(response.headers)
            call.answer = response.json() if response.content else None
        call.answered = time.time()

    def client(self, index: int) -> None:
        user = sorted(self.tokens)[index % len(self.tokens)]
        rng = random.Random(self.seed * 1000 + index)
        mine: list[int] = []
        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {self.tokens[user]}"
            session.headers["Connection"] = "close"  # see operator(): a client alternates between servers
            while not self.stop.is_set():
                call = self.send(session, rng, user, mine)
                if call.status == 503 or call.error:
                    time.sleep(0.2)  # Retry-After says 1-5 s; a storm keeps asking sooner, to see the outage end

    def operator(self, fqdns: tuple[str, ...], token: str) -> None:
        """Power commands (reboot) on these systems, one every second, through either server."""
        rng = random.Random(self.seed)
        with requests.Session() as session:
            session.headers["Authorization"] = f"Bearer {token}"
            # A connection idle for a while may be closed by the server (gunicorn_keepalive) just as the next
            # request goes out, which no retry may cover for a POST: a connection per request.
            session.headers["Connection"] = "close"
            while not self.stop.wait(1.0):
                name, url = self.servers.pick(rng)
                call = Call(name, "power", "admin", {"action": "reboot"}, time.time(), rng.choice(fqdns))
                self.ask(session, call, "POST", f"{url}/api/v1/systems/{call.target}/power")

    def run(self, power: tuple[tuple[str, ...], str] | None = None) -> list[threading.Thread]:
        """Start the clients (and, given (systems, admin token), the operator's power commands)."""
        threads = [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(self.clients)]
        if power:
            threads.append(threading.Thread(target=self.operator, args=power, daemon=True))
        for thread in threads:
            thread.start()
        return threads


def wait_until(what: str, predicate, timeout: float = 30.0, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(step)
    return result


def unexpected(calls: list[Call], killed: dict[str, tuple[float, float]]) -> list[str]:
    """Every call whose outcome breaks the rules: an answer not allowed for its action (never a 500), a 503
    without Retry-After or problem+json, no answer at all unless its server was being killed meanwhile
    (killed: server name -> (kill time, back time))."""
    problems = []
    for call in calls:
        if call.status is None:
            window = killed.get(call.server)
            if not (window and call.error.startswith("connection lost") and call.sent <= window[1]
                    and call.answered >= window[0]):
                problems.append(f"{call.action} to {call.server}: {call.error}")
        elif call.status not in ALLOWED[call.action]:
            problems.append(f"{call.action} to {call.server}: {call.status} {call.answer}")
        elif call.status == 503 and not (call.headers.get("Retry-After", "").isdigit()
                                         and call.headers.get("Content-Type") == "application/problem+json"):
            problems.append(f"503 without Retry-After or problem+json: {call.headers} {call.answer}")
    return problems
