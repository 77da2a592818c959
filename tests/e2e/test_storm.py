"""End to end, on a real `lablease-server serve` over SQLite and PostgreSQL: booking storms,
a crash in the middle of one, and the worker's expiry.

Every reserve request sends an `end` on a whole second, so the API's times
(shown to the second) are exact where overlaps are decided: an overlap of
even a fraction of a second between two accepted reservations is visible in
what the API lists. No test here measures speed (bench/ does).
"""
from __future__ import annotations

import math
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import requests

from lablease.config import Settings

CLIENTS = 16
USERS = ("ada", "bob", "cyd")


# --- helpers ---------------------------------------------------------------------------------

def parse(moment: str | None) -> datetime | None:
    return None if moment is None else datetime.fromisoformat(moment.replace("Z", "+00:00"))


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat().replace("+00:00", "Z")


def overlaps(a_start: datetime, a_end: datetime | None, b_start: datetime, b_end: datetime | None) -> bool:
    """Half-open windows [start, end), end None = open-ended."""
    return (b_end is None or a_start < b_end) and (a_end is None or b_start < a_end)


def overlapping_pairs(reservations: list[dict]) -> list[tuple[dict, dict]]:
    ordered = sorted(reservations, key=lambda r: parse(r["start"]))
    pairs = []
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if overlaps(parse(a["start"]), parse(a["end"]), parse(b["start"]), parse(b["end"])):
                pairs.append((a, b))
    return pairs


def add_systems(server, tmp_path, *fqdns: str) -> None:
    path = tmp_path / "systems.yml"
    path.write_text("systems:\n" + "".join(f"  - {{fqdn: {f}, arch: x86_64, condition: manual}}\n" for f in fqdns))
    server.admin_cli("system", "import", str(path))


def add_users(server, names=USERS) -> dict[str, str]:
    """name -> token for these new users and the admin."""
    for name in names:
        server.add_user(name)
    return {name: server.tokens[name] for name in (*names, "admin")}


def session_for(token: str) -> requests.Session:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    return session


@dataclass
class Attempt:
    user: str
    body: dict
    sent: float  # client clock (same host as the server) when the request left
    status: int | None = None  # None: no answer
    error: str = ""  # why there was no answer
    answer: dict | None = None
    content_type: str = ""


@dataclass
class Storm:
    """CLIENTS threads, each with its own session and user, reserving random windows."""

    url: str
    tokens: dict[str, str]  # user name -> token
    systems: tuple[str, ...]
    horizon: int  # starts fall in [now, now + horizon) seconds
    minutes: tuple[int, int]  # durations, whole minutes
    attempts: int | None = None  # per client; None: until stopped or the server goes away
    seed: int = 0
    attempts_made: list[Attempt] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def window(self, rng: random.Random) -> dict:
        now = math.ceil(time.time())
        start = None if rng.random() < 0.25 else now + rng.randrange(self.horizon)
        end = (start or now) + 60 * rng.randint(*self.minutes)
        body = {"system": rng.choice(self.systems), "end": rfc3339(end), "request_id": uuid.uuid4().hex}
        if start is not None:
            body["start"] = rfc3339(start)
        return body

    def client(self, index: int, barrier: threading.Barrier) -> None:
        user = list(self.tokens)[index % len(self.tokens)]
        session = session_for(self.tokens[user])
        rng = random.Random(self.seed * 1000 + index)
        barrier.wait()
        count = 0
        with session:
            while not self.stop.is_set() and (self.attempts is None or count < self.attempts):
                count += 1
                attempt = Attempt(user, self.window(rng), time.time())
                self.attempts_made.append(attempt)  # list.append is atomic under the GIL
                try:
                    response = session.post(self.url + "/api/v1/reservations", json=attempt.body, timeout=15)
                except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError):
                    attempt.error = "connection lost"  # the server went away under us (the kill -9 test)
                    return
                except requests.Timeout:
                    attempt.error = "no answer in 15 s"
                    return
                attempt.status = response.status_code
                attempt.content_type = response.headers.get("Content-Type", "")
                if attempt.content_type.split(";")[0] in ("application/json", "application/problem+json"):
                    attempt.answer = response.json()
                else:
                    attempt.answer = {"body": response.text[:200]}

    def run(self) -> threading.Thread:
        """Start the clients; the returned thread ends when they all have."""
        barrier = threading.Barrier(CLIENTS)
        threads = [threading.Thread(target=self.client, args=(i, barrier), daemon=True) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()

        def join_all():
            for thread in threads:
                thread.join()

        waiter = threading.Thread(target=join_all, daemon=True)
        waiter.start()
        return waiter

    def answered(self, status: int) -> list[Attempt]:
        return [a for a in self.attempts_made if a.status == status]


def listed(api, system: str) -> list[dict]:
    response = api.get("/reservations", params={"system": system})
    assert response.status_code == 200, response.text
    return response.json()


def check_conflict_named(attempt: Attempt, accepted: list[dict]) -> str | None:
    """None when the 409 names an accepted reservation that really overlaps the refused window."""
    if attempt.content_type.split(";")[0] != "application/problem+json":
        return f"409 with Content-Type {attempt.content_type!r}"
    conflict = (attempt.answer or {}).get("conflict")
    if not conflict or not {"start", "end", "user", "id"} <= set(conflict):
        return f"409 without a named conflict: {attempt.answer}"
    if attempt.answer.get("status") != 409 or not attempt.answer.get("type") or not attempt.answer.get("title"):
        return f"409 problem body incomplete: {attempt.answer}"
    matches = [r for r in accepted if r["system"] == attempt.body["system"] and r["user"] == conflict["user"]
               and r["start"] == conflict["start"] and r["end"] == conflict["end"]]
    if len(matches) != 1:
        return f"409 names {conflict}, which matches {len(matches)} accepted reservations"
    holder = matches[0]
    # A request without start starts at the server's now, which is after the request left.
    start = parse(attempt.body["start"]) if "start" in attempt.body else datetime.fromtimestamp(attempt.sent, timezone.utc)
    if not overlaps(parse(holder["start"]), parse(holder["end"]), start, parse(attempt.body["end"])):
        return f"409 for {attempt.body} names {conflict}, which does not overlap it"
    return None


# --- the storm -------------------------------------------------------------------------------

def test_storm_on_one_system_books_no_overlaps(live_server, tmp_path):
    """16 clients of 4 users, 320 reserve attempts on one system with overlapping random windows."""
    add_systems(live_server, tmp_path, "storm.lab.test")
    tokens = add_users(live_server)
    storm = Storm(live_server.url, tokens, ("storm.lab.test",), horizon=1800, minutes=(1, 10), attempts=20, seed=1)
    storm.run().join(120)

    attempts = storm.attempts_made
    unexpected = [(a.status or a.error, a.answer) for a in attempts if a.status not in (201, 409)]
    assert not unexpected, f"{len(unexpected)} answers neither 201 nor 409, e.g. {unexpected[:3]}"
    assert len(attempts) == CLIENTS * 20
    created = storm.answered(201)
    refused = storm.answered(409)
    assert created and refused, "the storm should both accept and refuse some"

    reservations = listed(live_server.admin, "storm.lab.test")
    assert len(reservations) == len(created)
    assert {r["id"] for r in reservations} == {a.answer["id"] for a in created}
    assert overlapping_pairs(reservations) == []
    by_id = {r["id"]: r for r in reservations}
    for attempt in created:
        answer = attempt.answer
        assert (answer["start"], answer["end"], answer["user"]) == (
            by_id[answer["id"]]["start"], by_id[answer["id"]]["end"], attempt.user)
        assert parse(answer["end"]) == parse(attempt.body["end"])
    problems = [p for p in (check_conflict_named(a, reservations) for a in refused) if p]
    assert not problems, f"{len(problems)} of {len(refused)} refusals are wrong, e.g. {problems[:3]}"


# --- a crash in the middle of a storm --------------------------------------------------------

def test_kill9_mid_storm_loses_no_accepted_reservation(live_server, tmp_path):
    systems = tuple(f"k{i}.lab.test" for i in range(4))
    add_systems(live_server, tmp_path, *systems)
    tokens = add_users(live_server, USERS[:1])
    # Wide windows over two days on four systems: most requests succeed, some collide.
    storm = Storm(live_server.url, tokens, systems, horizon=2 * 86400, minutes=(1, 60), seed=2)
    clients = storm.run()
    deadline = time.monotonic() + 15
    while len(storm.answered(201)) < 100 and time.monotonic() < deadline:
        time.sleep(0.01)
    live_server.kill9()
    storm.stop.set()
    clients.join(60)
    lost_in_flight = [a for a in storm.attempts_made if a.status is None]
    assert lost_in_flight, "the kill should catch requests in flight"
    assert all(a.error == "connection lost" for a in lost_in_flight), \
        [a.error for a in lost_in_flight if a.error != "connection lost"]
    created = storm.answered(201)
    assert len(created) >= 100
    assert all(a.status in (201, 409, None) for a in storm.attempts_made), \
        [(a.status, a.answer) for a in storm.attempts_made if a.status not in (201, 409, None)][:3]

    live_server.launch()
    for attempt in created:
        response = live_server.admin.get(f"/reservations/{attempt.answer['id']}")
        assert response.status_code == 200, f"reservation {attempt.answer['id']} was lost: {response.text}"
        now = response.json()
        assert (now["system"], now["start"], now["end"], now["user"]) == (
            attempt.answer["system"], attempt.answer["start"], attempt.answer["end"], attempt.user)

    # Requests that got no answer: retrying with the same request_id finds what the crash kept.
    kept = {a.answer["id"] for a in created}
    for attempt in lost_in_flight:
        with session_for(tokens[attempt.user]) as session:
            response = session.post(live_server.url + "/api/v1/reservations", json=attempt.body, timeout=30)
        assert response.status_code in (200, 201, 409), response.text
        if response.status_code in (200, 201):
            kept.add(response.json()["id"])
    everything = [r for system in systems for r in listed(live_server.admin, system)]
    assert {r["id"] for r in everything} == kept, "reservations nobody was told about, or lost ones"
    for system in systems:
        assert overlapping_pairs([r for r in everything if r["system"] == system]) == []


# --- expiry by the worker --------------------------------------------------------------------

def poll_until_expired(api, reservation_id: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        reservation = api.get(f"/reservations/{reservation_id}").json()
        if reservation["state"] != "active" and reservation["state"] != "upcoming":
            return reservation
        assert time.monotonic() < deadline, f"reservation {reservation_id} not returned in {timeout} s: {reservation}"
        time.sleep(0.2)


def test_worker_catches_up_on_start_then_returns_due_reservations_within_5s(live_server, tmp_path):
    """A reservation that ended while the server was down is returned as soon as it is back; then, with
    the server up, one of a few seconds and one whose heartbeat never comes are returned within 5 s of
    their due time (measured on the server's own times). One test, so that the waits overlap."""
    add_systems(live_server, tmp_path, "late.lab.test", "short.lab.test", "beat.lab.test")
    # Time to stop the server first: its gevent workers look for the stop signal once a second, then let
    # open connections finish (about 3 s in all, more on a busy machine) - an idle kept-alive one (the storm's
    # clients leave some) when its keep-alive runs out (gunicorn_keepalive, docs/deployment.md).
    end = math.ceil(time.time()) + 8 + math.ceil(Settings().gunicorn_keepalive.total_seconds())
    late = live_server.admin.post("/reservations", json={"system": "late.lab.test", "end": rfc3339(end)})
    assert late.status_code == 201, late.text
    live_server.stop()
    assert time.time() < end - 0.5, "the server took too long to stop for this test to mean anything"
    while time.time() < end + 0.5:
        time.sleep(0.1)
    started = time.time()
    live_server.launch()
    ready = time.time()

    # With the server back: a reservation of a few seconds, and one whose heartbeat never comes.
    now = math.ceil(time.time())
    short = live_server.admin.post("/reservations", json={"system": "short.lab.test", "end": rfc3339(now + 3)})
    assert short.status_code == 201, short.text
    beat = live_server.admin.post("/reservations", json={"system": "beat.lab.test", "duration": "1h", "heartbeat": "10s"})
    assert beat.status_code == 201, beat.text
    due = parse(beat.json()["due"])
    assert due == parse(beat.json()["start"]) + timedelta(seconds=10)

    caught_up = poll_until_expired(live_server.admin, late.json()["id"])
    assert caught_up["state"] == "expired"
    assert parse(caught_up["end"]) == parse(late.json()["end"])
    returned_at = parse(caught_up["returned_at"]).timestamp()  # shown to the second
    assert returned_at >= math.floor(started), "returned before the restart, while the server was down?"
    assert returned_at - ready <= 5, f"returned {returned_at - ready:.1f} s after the server was ready"

    expired = poll_until_expired(live_server.admin, short.json()["id"])
    assert expired["state"] == "expired"
    end, returned_at = parse(expired["end"]), parse(expired["returned_at"])
    assert end == parse(short.json()["end"]), "an expired reservation keeps its end"
    assert timedelta(0) <= returned_at - end <= timedelta(seconds=5), expired
    again = live_server.admin.post("/reservations", json={"system": "short.lab.test", "duration": "1m"})
    assert again.status_code == 201, f"the system stays booked after expiry: {again.text}"

    missed = poll_until_expired(live_server.admin, beat.json()["id"])
    assert missed["state"] == "expired"
    returned_at = parse(missed["returned_at"])
    assert timedelta(0) <= returned_at - due <= timedelta(seconds=5), missed
    assert parse(missed["end"]) == returned_at, "the hard end moves to the return"
