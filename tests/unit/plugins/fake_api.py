# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake HTTP layer for unit tests: just enough of the lablease API, in memory.

It stands in for ansible.module_utils.urls.open_url, so modules are tested
through the real client (headers, JSON, problem+json errors). Integration
tests (tests/e2e/ansible) use the real server instead.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import re
from datetime import datetime, timedelta, timezone
from urllib.error import HTTPError
from urllib.parse import parse_qs, urlparse

NOW = datetime(2026, 11, 22, 10, 0, 0, tzinfo=timezone.utc)


def iso(moment):
    return moment.isoformat().replace("+00:00", "Z") if moment else None


class Answer:
    def __init__(self, status, body):
        self.status = status
        self.body = b"" if body is None else json.dumps(body).encode()

    def getcode(self):
        return self.status

    def read(self):
        return self.body


class FakeApi:
    def __init__(self, user="alice", admin=False):
        self.user = user
        self.admin = admin
        self.systems = {}
        self.reservations = []
        self.bookings = []  # schedule "vlans"
        self.calls = []  # (method, path, body)
        self.fail_next = []  # statuses or exceptions to raise before answering

    # -- setup ------------------------------------------------------------------------
    def add_system(self, fqdn, arch="x86_64", **extra):
        system = {"fqdn": fqdn, "arch": arch, "cpus": None, "memory_mb": None, "lab": None, "attributes": {},
                  "condition": "manual", "usage": "idle", "owner": None, "power": {}, "netboot": {},
                  "reservation": None, "loan": None}
        system.update(extra)
        self.systems[fqdn] = system
        return system

    def add_reservation(self, system, user=None, hours=4, returned=False, request_id=None, start=None):
        start = start or NOW - timedelta(minutes=5)
        reservation = {"id": len(self.reservations) + 1, "system": system, "user": user or self.user,
                       "kind": "manual", "start": iso(start), "end": iso(start + timedelta(hours=hours)),
                       "returned_at": iso(NOW) if returned else None,
                       "state": "returned" if returned else ("active" if start <= NOW else "upcoming"),
                       "return_loan": False, "heartbeat": None, "last_heartbeat": None,
                       "due": None, "seconds_left": None if returned else 3600, "request_id": request_id}
        self.reservations.append(reservation)
        return reservation

    @property
    def writes(self):
        return [c for c in self.calls if c[0] != "GET"]

    # -- the opener -------------------------------------------------------------------
    def __call__(self, url, method="GET", data=None, headers=None, **kwargs):
        parsed = urlparse(url)
        path = parsed.path[len("/api/v1"):]
        query = dict((k, v[0]) for k, v in parse_qs(parsed.query).items())
        body = json.loads(data) if data else None
        self.calls.append((method, path, body))
        if self.fail_next:
            failure = self.fail_next.pop(0)
            if isinstance(failure, Exception):
                raise failure
            self.problem(url, failure, "Service Unavailable", "try later")
        if headers.get("Authorization") != "Bearer secret":
            self.problem(url, 401, "Authentication required", "the API token is not known")
        status, answer = self.route(url, method, path, query, body)
        return Answer(status, answer)

    @staticmethod
    def problem(url, status, title, detail, **extra):
        payload = dict(type="urn:lablease:problem:%s" % status, title=title, status=status, detail=detail, **extra)
        raise HTTPError(url, status, title, {"Content-Type": "application/problem+json"},
                        io.BytesIO(json.dumps(payload).encode()))

    def route(self, url, method, path, query, body):
        if path == "/me":
            return 200, {"name": self.user, "admin": self.admin, "groups": []}
        match = re.match(r"^/systems/([^/]+)$", path)
        if path == "/systems" and method == "GET":
            wanted = dict((k, v) for k, v in query.items() if k in ("arch", "lab", "condition"))
            return 200, [s for s in self.systems.values() if all(s.get(k) == v for k, v in wanted.items())]
        if path == "/systems" and method == "POST":
            if body["fqdn"] in self.systems:
                self.problem(url, 409, "Conflict", "a system named %s already exists" % body["fqdn"])
            fqdn = body.pop("fqdn")
            return 201, self.add_system(fqdn, **body)
        if match:
            system = self.systems.get(match.group(1))
            if system is None:
                self.problem(url, 404, "Not found", "no system named %s" % match.group(1))
            if method == "PATCH":
                system.update(body)
            elif method == "DELETE":
                system["condition"] = "removed"
                return 204, None
            return 200, system
        if path == "/reservations" and method == "GET":
            found = [r for r in self.reservations if r["user"] == self.user or query.get("user") != "me"]
            if "system" in query:
                found = [r for r in found if r["system"] == query["system"]]
            if query.get("active") == "true":
                found = [r for r in found if r["returned_at"] is None]
            if query.get("active") == "false":
                found = [r for r in found if r["returned_at"] is not None]
            return 200, list(reversed(found))
        if path == "/reservations" and method == "POST":
            return self.reserve(url, body)
        if path.startswith("/schedules/"):
            return self.schedule(url, method, path, query, body)
        match = re.match(r"^/reservations/(\d+)(/heartbeat)?$", path)
        if match:
            index = int(match.group(1)) - 1
            if index >= len(self.reservations):
                self.problem(url, 404, "Not found", "no reservation %s" % match.group(1))
            reservation = self.reservations[index]
            if match.group(2):
                reservation["last_heartbeat"] = iso(NOW)
            elif method == "PATCH":
                reservation["end"] = body["end"]
            elif method == "DELETE":
                reservation.update(returned_at=iso(NOW), state="returned", seconds_left=None)
                return 204, None
            return 200, reservation
        self.problem(url, 404, "Not Found", "The requested URL was not found on the server.")

    def reserve(self, url, body):
        for reservation in self.reservations:
            if reservation["request_id"] and reservation["request_id"] == body.get("request_id"):
                return 200, reservation
        if body["system"] not in self.systems:
            self.problem(url, 404, "Not found", "no system named %s" % body["system"])
        for reservation in self.reservations:
            if reservation["system"] == body["system"] and reservation["returned_at"] is None:
                conflict = {"resource": body["system"], "start": reservation["start"], "end": reservation["end"],
                            "user": reservation["user"], "kind": "reservation", "id": reservation["id"]}
                self.problem(url, 409, "Booking conflict", "%s is reserved by %s from %s until %s" % (
                    body["system"], reservation["user"], reservation["start"], reservation["end"]), conflict=conflict)
        made = self.add_reservation(body["system"], start=NOW, request_id=body.get("request_id"))
        if body.get("end"):
            made["end"] = body["end"]
        return 201, made

    def schedule(self, url, method, path, query, body):
        match = re.match(r"^/schedules/([^/]+)/reservations(?:/(\d+))?$", path)
        if not match or match.group(1) != "vlans":
            self.problem(url, 404, "Not found", "no schedule subject named %s" % path.split("/")[2])
        live = [b for b in self.bookings if not b.get("cancelled")]
        if match.group(2) is None and method == "GET":
            found = [b for b in live if all(b.get(k) == query[k] for k in ("resource_id", "user", "slice") if k in query)]
            return 200, found
        if match.group(2) is None and method == "POST":
            for other in live:
                if other["resource_id"] == body["resource_id"]:
                    conflict = {"resource": "vlans/" + body["resource_id"], "start": other["start"],
                                "end": other["end"], "user": other["user"], "kind": "schedule", "id": other["id"]}
                    self.problem(url, 409, "Booking conflict", "taken", conflict=conflict)
            end = NOW + timedelta(seconds=86400)
            booking = {"id": len(self.bookings) + 1, "subject": "vlans", "resource_id": body["resource_id"],
                       "resource_spec": body.get("resource_spec") or {}, "user": self.user, "slice": body.get("slice"),
                       "start": iso(NOW), "end": body.get("end") or iso(end), "quantity": body.get("quantity", 1)}
            self.bookings.append(booking)
            return 201, booking
        booking = self.bookings[int(match.group(2)) - 1]
        if method == "PATCH":
            booking.update(body)
        elif method == "DELETE":
            booking["cancelled"] = True
            return 204, None
        return 200, booking
