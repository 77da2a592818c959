# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake HTTP layer for unit tests: just enough of the lablease API, in memory.

It stands in for ansible.module_utils.urls.open_url, so modules are tested
through the real client (headers, JSON, problem+json errors). Integration
tests (tests/e2e/ansible) use the real server instead.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import io
import json
import re
from datetime import datetime, timedelta, timezone
from urllib.error import HTTPError
from urllib.parse import parse_qs, urlencode, urlparse

from ansible_collections.lablease.lab.plugins.module_utils.times import parse_duration
from ansible_collections.lablease.lab.tests.unit.plugins.openapi_check import load_copy

CONTRACT = load_copy()  # every request and answer is checked against the server's OpenAPI description

NOW = datetime(2026, 11, 22, 10, 0, 0, tzinfo=timezone.utc)


def iso(moment):
    return moment.isoformat().replace("+00:00", "Z") if moment else None


class Answer:
    def __init__(self, status, body, headers=None):
        self.status = status
        self.body = b"" if body is None else json.dumps(body).encode()
        self.headers = headers or {}

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
        self.waits = {}  # waiting reservation id -> (the system it waits for, the reservation holding it)
        self.grant_after = 2  # looks at a waiting reservation before it is granted (None: never)
        self.bookings = []  # schedule "vlans"
        self.loans = {}  # fqdn -> loan
        self.groups = {}
        self.pools = {}
        self.health_checks = {}
        self.policies = {}  # fqdn -> {"use_pool_policy", "rules"}
        self.jobs = {}
        self.recipes = {}
        self.polls = {}  # recipe id -> statuses to go through on each GET of its job
        self.distro_trees = {}
        self.installations = {}
        self.installation_polls = {}  # installation id -> changes (or functions returning them) for each GET of it
        self.commands = {}
        self.command_polls = {}  # command id -> changes (or functions returning them) for each GET of it
        self.ars = {}  # advance reservations by id
        self.max_ars = None  # the server's max_advance_reservations (None: no limit; 0: ARs off)
        self.ar_bound = set()  # ids of ARs with work bound to them
        self.bound_detail = "advance reservation %d has bound work (job 3); delete with force=true to abort it first"
        self.calls = []  # (method, path, body)
        self.validated = set()  # indexes in calls of those sent with ?validate_only=true
        self.queries = []  # (method, path, query) of each call with a query string
        self.pages = []  # (path, after) of each list asked for
        self.fail_next = []  # statuses or exceptions to raise before answering

    # -- setup ------------------------------------------------------------------------
    def add_system(self, fqdn, arch="x86_64", **extra):
        system = {"fqdn": fqdn, "arch": arch, "cpus": None, "memory_mb": None, "lab": None, "attributes": {},
                  "condition": "manual", "usage": "idle", "owner": None, "power": {}, "netboot": {},
                  "reservation": None, "loan": None, "power_state": "unknown", "release_action": "power_off",
                  "installation": None}
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
    def sent(self):
        """The writes, each request of a batch as itself: (method, path, body)."""
        flat = []
        for method, path, body in self.writes:
            if path == "/batch":
                flat.extend((r["method"], r["path"][len("/api/v1"):], r.get("body")) for r in body["requests"])
            else:
                flat.append((method, path, body))
        return flat

    @property
    def writes(self):
        """The calls that could change something (a validate_only one cannot)."""
        return [c for number, c in enumerate(self.calls) if c[0] != "GET" and number not in self.validated]

    # -- the opener -------------------------------------------------------------------
    def __call__(self, url, method="GET", data=None, headers=None, **kwargs):
        parsed = urlparse(url)
        path = parsed.path[len("/api/v1"):]
        query = dict((k, v[0]) for k, v in parse_qs(parsed.query).items())
        body = json.loads(data) if data and headers.get("Content-Type") == "application/json" else None
        self.calls.append((method, path, body))
        validating = method != "GET" and query.pop("validate_only", None) == "true"
        if validating:
            self.validated.add(len(self.calls) - 1)
        elif query:
            self.queries.append((method, path, query))
        if self.fail_next:
            failure = self.fail_next.pop(0)
            if isinstance(failure, Exception):
                raise failure
            self.problem(url, failure, "Service Unavailable", "try later")
        CONTRACT.check_request(method, path, query, body, headers.get("Content-Type"))
        # validate_only works on a copy and puts the untouched objects back; a batch keeps a copy to go back to
        kept = self.state() if validating else (copy.deepcopy(self.state()) if path == "/batch" else None)
        if validating:
            self.restore(copy.deepcopy(kept))
        try:
            if headers.get("Authorization") != "Bearer secret":
                self.problem(url, 401, "Authentication required", "the API token is not known")
            if path == "/batch" and method == "POST":
                status, answer = self.batch(url, body)
            else:
                status, answer = self.route(url, method, path, query, body)
        except HTTPError as error:
            if kept is not None:
                self.restore(kept)  # like the server: a refused request (or batch) keeps nothing
            CONTRACT.check_answer(method, path, error.code, error.payload, problem=True)
            raise
        finally:
            if validating:
                self.restore(kept)  # like the server: validate_only keeps nothing
        CONTRACT.check_answer(method, path, status, answer)
        if method == "GET" and isinstance(answer, list):
            return self.page(path, query, answer)
        return Answer(status, answer, {"Validate-Only": "true"} if validating else None)

    # -- validate_only and batches ------------------------------------------------------
    RECORDS = ("calls", "validated", "queries", "pages", "fail_next")  # what the test looks at: never rolled back

    def state(self):
        return dict((k, v) for k, v in self.__dict__.items() if k not in self.RECORDS)

    def restore(self, kept):
        self.__dict__.update(kept)

    def batch(self, url, body):
        """Like the server's POST /batch: each request in order; the first refusal is the answer."""
        responses = []
        for number, request in enumerate(body["requests"], 1):
            path = request["path"][len("/api/v1"):]
            query = dict((k, ("true" if v else "false") if isinstance(v, bool) else str(v))
                         for k, v in (request.get("query") or {}).items())
            try:
                status, answer = self.route(url, request["method"], path, query, copy.deepcopy(request.get("body")))
            except HTTPError as error:
                payload = dict(error.payload, request=number, detail="request %d of the batch (%s %s): %s" % (
                    number, request["method"], request["path"], error.payload["detail"]))
                extra = dict((k, v) for k, v in payload.items() if k not in ("type", "title", "status", "detail"))
                self.problem(url, error.code, payload["title"], payload["detail"], **extra)
            responses.append(dict(status=status, **({} if answer is None else {"body": answer})))
        return 200, {"responses": responses}

    def page(self, path, query, entries):
        """Like the server: `limit` entries (default 100) after the cursor, and a Link to the next page.

        The fake's cursor is a position (the server's is a signed sort key; clients only follow it).
        """
        self.pages.append((path, query.get("after")))
        start, limit = int(query.get("after", 0)), int(query.get("limit", 100))
        headers = {}
        if start + limit < len(entries):
            following = urlencode(sorted(dict(query, after=str(start + limit)).items()))
            headers["Link"] = '</api/v1%s?%s>; rel="next"' % (path, following)
        return Answer(200, entries[start:start + limit], headers)

    @staticmethod
    def problem(url, status, title, detail, **extra):
        payload = dict(type="urn:lablease:problem:%s" % status, title=title, status=status, detail=detail, **extra)
        error = HTTPError(url, status, title, {"Content-Type": "application/problem+json"},
                          io.BytesIO(json.dumps(payload).encode()))
        error.payload = payload
        raise error

    def route(self, url, method, path, query, body):
        if path == "/me":
            return 200, {"name": self.user, "admin": self.admin, "groups": []}
        match = re.match(r"^/systems/([^/]+)$", path)
        if path == "/systems" and method == "GET":
            wanted = dict((k, v) for k, v in query.items() if k in ("arch", "lab", "condition"))
            return 200, [s for s in self.systems.values() if all(s.get(k) == v for k, v in wanted.items())]
        if path == "/systems" and method == "POST":
            fqdn = body.pop("fqdn")
            return 201, self.add_system(fqdn, **body)
        if path.startswith("/jobs"):
            return self.job(url, method, path, body, query)
        if path.startswith("/advance-reservations"):
            return self.advance(url, method, path, body, query)
        if path.startswith("/distro-trees"):
            return self.distro(url, method, path, body, query)
        if path.startswith("/installations/") or path.startswith("/commands/"):
            return self.provisioned(url, path)
        provisioning = re.match(r"^/systems/([^/]+)/(provision|power)$", path)
        if provisioning:
            return self.provisioning(url, provisioning.group(1), provisioning.group(2), body)
        for prefix, handler in (("/systems/", self.access), ("/groups", self.group), ("/pools", self.pool),
                                ("/recipes/", self.recipe)):
            if path.startswith(prefix) and (prefix != "/systems/" or path.count("/") > 2):
                if self.takes_force(method, path):  # e.g. a pool or policy change that may break an AR
                    return self.ar_guarded(url, query, body, lambda: handler(url, method, path, body))
                return handler(url, method, path, body)
        if match:
            system = self.systems.get(match.group(1))
            if system is None:
                self.problem(url, 404, "Not found", "no system named %s" % match.group(1))
            if method == "PATCH":
                body = dict(body)
                inventory = body.pop("inventory", None)
                system.update(body)
                if inventory is not None:  # the keys given replace the server's, as the server does
                    system["inventory"] = dict(system.get("inventory") or {}, **inventory)
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
        if path.startswith("/health-checks"):
            return self.health_check(url, method, path, body)
        match = re.match(r"^/reservations/(\d+)(/heartbeat)?$", path)
        if match:
            index = int(match.group(1)) - 1
            if index >= len(self.reservations):
                self.problem(url, 404, "Not found", "no reservation %s" % match.group(1))
            reservation = self.reservations[index]
            if match.group(2):  # like the server: only an open reservation made with a heartbeat
                if reservation["returned_at"] is not None:
                    self.problem(url, 409, "Conflict", "reservation %d was already returned" % reservation["id"])
                reservation["last_heartbeat"] = iso(NOW)
            elif method == "PATCH":
                if "end" in body:
                    reservation["end"] = body["end"]
                if "heartbeat" in body:  # a new interval from now, or (null) none
                    beat = body["heartbeat"]
                    reservation["heartbeat"] = None if beat is None else int(parse_duration(beat))
                    reservation["last_heartbeat"] = None if beat is None else iso(NOW)
            elif method == "DELETE":
                waiting = reservation.get("state") == "waiting"
                reservation.update(returned_at=iso(NOW), state="cancelled" if waiting else "returned", seconds_left=None)
                return 204, None
            self.looked_at(reservation)
            return 200, reservation
        raise AssertionError("the fake API does not serve %s %s" % (method, path))

    # -- loans and access policies ------------------------------------------------------
    def access(self, url, method, path, body):
        parts = path.split("/")  # ['', 'systems', fqdn, 'loan' | 'access-policy', ...]
        fqdn = parts[2]
        if fqdn not in self.systems:
            self.problem(url, 404, "Not found", "no system named %s" % fqdn)
        if parts[3] == "loan":
            loan = self.loans.get(fqdn)
            if method == "POST":
                if loan:
                    self.problem(url, 409, "Conflict", "%s is already lent to %s" % (fqdn, loan["recipient"]))
                others = [r for r in self.reservations if r["system"] == fqdn and r["returned_at"] is None
                          and r["user"] != body["recipient"]]
                if others and not body.get("force"):  # like the server: returned only when forced
                    self.problem(url, 409, "Conflict", "%s is reserved by %s until %s (reservation %d), so %s could "
                                 "not use the loan; lend with force=true to return it (its holder is told)" % (
                                     fqdn, others[0]["user"], others[0]["end"], others[0]["id"], body["recipient"]))
                for reservation in others:
                    reservation.update(returned_at=iso(NOW), state="returned", seconds_left=None)
                seconds = body.get("duration")
                end = iso(NOW + timedelta(seconds=int(seconds))) if seconds and str(seconds).isdigit() else (
                    iso(NOW + timedelta(days=1)) if seconds else None)
                self.loans[fqdn] = {"id": 1, "system": fqdn, "recipient": body["recipient"], "lender": self.user,
                                    "start": iso(NOW), "end": end, "comment": body.get("comment"),
                                    "returned_at": None, "return_reason": None, "purpose": body.get("purpose")}
                return 201, self.loans[fqdn]
            if loan is None:
                self.problem(url, 404, "Not found", "%s is not lent to anybody" % fqdn)
            if method == "PATCH":
                loan["end"] = body.get("end") or "extended"
            elif method == "DELETE":
                del self.loans[fqdn]
                return 204, None
            return 200, loan
        policy = self.policies.setdefault(fqdn, {"system": fqdn, "use_pool_policy": None, "rules": [
            {"id": 1, "permission": "view", "user": None, "group": None, "everybody": True}]})
        if method == "PUT":
            if "rules" in body:
                policy["rules"] = [self.rule(r) for r in body["rules"]]
            if "use_pool_policy" in body:
                policy["use_pool_policy"] = body["use_pool_policy"]
        elif method == "POST":
            rule = self.rule(body)
            policy["rules"].append(rule)
            return 201, rule
        elif method == "DELETE":
            policy["rules"] = [r for r in policy["rules"] if r["id"] != int(parts[-1])]
            return 204, None
        return 200, policy

    def rule(self, body):
        self.rule_ids = getattr(self, "rule_ids", 1) + 1
        return {"id": self.rule_ids, "permission": body["permission"], "user": body.get("user"),
                "group": body.get("group"), "everybody": bool(body.get("everybody"))}

    # -- groups and pools ---------------------------------------------------------------
    def group(self, url, method, path, body):
        parts = path.split("/")
        if len(parts) == 2 and method == "POST":
            group = {"name": body["name"], "description": body.get("description"), "owners": [self.user],
                     "members": [self.user], "webhook_url": None}
            self.groups[body["name"]] = group
            return 201, group
        group = self.groups.get(parts[2])
        if group is None:
            self.problem(url, 404, "Not found", "no group named %s" % parts[2])
        if len(parts) > 3:  # members
            if method == "POST":
                if body["user"] not in group["members"]:
                    group["members"].append(body["user"])
                owners = [u for u in group["owners"] if u != body["user"]]
                group["owners"] = owners + ([body["user"]] if body.get("owner") else [])
                return 200, group
            user = parts[4]
            group["members"] = [u for u in group["members"] if u != user]
            group["owners"] = [u for u in group["owners"] if u != user]
            return 204, None
        if method == "PATCH":
            group.update((k, v) for k, v in body.items() if k != "webhook_secret")
        elif method == "DELETE":
            del self.groups[parts[2]]
            return 204, None
        return 200, group

    def pool(self, url, method, path, body):
        parts = path.split("/")
        if len(parts) == 2 and method == "POST":
            pool = {"name": body["name"], "description": body.get("description"),
                    "owner_group": body.get("owner_group"), "systems": [],
                    "automation_floor": body.get("automation_floor", 0)}
            self.pools[body["name"]] = pool
            return 201, pool
        pool = self.pools.get(parts[2])
        if pool is None:
            self.problem(url, 404, "Not found", "no pool named %s" % parts[2])
        if len(parts) > 3:
            if method == "POST":
                pool["systems"].append(body["fqdn"])
                return 200, pool
            pool["systems"].remove(parts[4])
            return 204, None
        if method == "DELETE":
            del self.pools[parts[2]]
            return 204, None
        if method == "PATCH":
            pool.update((k, v) for k, v in body.items() if k in ("description", "owner_group", "automation_floor"))
        return 200, pool

    # -- health checks ------------------------------------------------------------------
    def health_check(self, url, method, path, body):
        """Like the server: one check per scope; `source` is the job as given, `job` its normal form."""
        parts = path.split("/")
        if len(parts) == 2:
            if method == "GET":
                return 200, list(self.health_checks.values())
            check = {"name": body["name"], "system": None, "pool": None, "arch": None, "every": None,
                     "after_recipes": None, "owner": self.user, "created_at": iso(NOW)}
            self.health_checks[body["name"]] = self.apply_check(check, body)
            return 201, check
        check = self.health_checks.get(parts[2])
        if check is None:
            self.problem(url, 404, "Not found", "no health check named %s" % parts[2])
        if method == "DELETE":
            del self.health_checks[parts[2]]
            return 204, None
        if method == "PATCH":
            self.apply_check(check, body)
        return 200, check

    @staticmethod
    def apply_check(check, body):
        if any(key in body for key in ("system", "pool", "arch")):
            check.update(dict((key, body.get(key)) for key in ("system", "pool", "arch")))
        for key in ("every", "after_recipes"):
            if key in body:
                check[key] = body[key]
        if "job" in body:
            check["source"] = body["job"]
            check["job"] = body["job"] if isinstance(body["job"], dict) else {"recipe_sets": []}
        return check

    # -- jobs and recipes ---------------------------------------------------------------
    def add_job(self, statuses=("queued",), systems=()):
        job_id = len(self.jobs) + 1
        recipes = []
        for index, status in enumerate(statuses):
            recipe_id = len(self.recipes) + 1
            system = systems[index] if index < len(systems) else None
            recipe = {"id": recipe_id, "status": status, "result": "none", "system": system, "whiteboard": "",
                      "job": job_id, "reservation": 100 + recipe_id if system else None, "tasks": []}
            self.recipes[recipe_id] = recipe
            recipes.append(recipe)
        self.jobs[job_id] = {"id": job_id, "owner": self.user, "whiteboard": "", "status": statuses[0],
                             "finished_at": None, "request_id": None,
                             "recipe_sets": [{"id": job_id, "recipes": recipes}]}
        return self.jobs[job_id]

    def unfinished_by_request(self, request_id):
        return [j for j in self.jobs.values() if request_id and j["request_id"] == request_id and not j["finished_at"]]

    @staticmethod
    def brief(job):
        """A job as the server shows it: its recipes without their tasks (GET /recipes/{id} has those)."""
        keys = ("id", "status", "result", "system", "whiteboard", "reservation")
        return dict(job, recipe_sets=[dict(rs, recipes=[dict((k, r[k]) for k in keys) for r in rs["recipes"]])
                                      for rs in job["recipe_sets"]])

    def job(self, url, method, path, body, query):
        status, job = self.job_answer(url, method, path, body, query)
        return status, [self.brief(j) for j in job] if isinstance(job, list) else self.brief(job)

    def job_answer(self, url, method, path, body, query):
        parts = path.split("/")
        if len(parts) == 2 and method == "GET":
            return 200, [j for j in self.jobs.values() if j["request_id"] == query.get("request_id")]
        if len(parts) == 2 and method == "POST":
            previous = self.unfinished_by_request(query.get("request_id"))
            if previous:
                return 200, previous[0]
            job = self.add_job()
            job["whiteboard"] = (body or {}).get("whiteboard", "")
            job["request_id"] = query.get("request_id")
            return 201, job
        job = self.jobs[int(parts[2])]
        recipes = job["recipe_sets"][0]["recipes"]
        if len(parts) > 3 and parts[3] == "cancel":
            for recipe in recipes:
                if recipe["status"] not in ("completed", "cancelled", "aborted"):
                    recipe["status"] = "cancelled"
            job["finished_at"] = "2026-11-22T12:00:00Z"
        for recipe in recipes:
            if self.polls.get(recipe["id"]):
                recipe.update(self.polls[recipe["id"]].pop(0))
        return 200, job

    def recipe(self, url, method, path, body):
        recipe = self.recipes[int(path.split("/")[2])]
        if method == "PATCH":
            recipe["tasks"] = recipe["tasks"] + body.get("tasks", [])
            if body.get("status"):
                recipe["status"] = body["status"]
                recipe["result"] = body.get("result") or recipe["result"]
        if recipe["status"] in ("queued", "scheduled", "waiting"):
            return 200, dict(recipe, why={"message": "no system matches"})
        return 200, recipe

    # -- distro trees, installations and power commands ----------------------------------
    def add_distro_tree(self, name, arch="x86_64", variant=None, **extra):
        tree_id = len(self.distro_trees) + 1
        tree = {"id": tree_id, "name": name, "family": None, "arch": arch, "variant": variant, "tags": [],
                "url": "http://mirror.lab.test/%s/%s/" % (name, arch), "kernel": "images/pxeboot/vmlinuz",
                "initrd": "images/pxeboot/initrd.img", "ks_meta": None, "kernel_options": None, "labs": [],
                "created_at": iso(NOW)}
        tree.update(extra)
        self.distro_trees[tree_id] = tree
        return tree

    def add_installation(self, fqdn, tree, status="running", reservation=None, ks_meta="", kernel_options="",
                         error=None):
        installation_id = len(self.installations) + 1
        installation = {"id": installation_id, "system": fqdn, "user": self.user, "reservation": reservation,
                        "recipe": None, "distro_tree": dict((k, tree[k]) for k in ("id", "name", "arch", "variant")),
                        "ks_meta": ks_meta, "kernel_options": kernel_options, "status": status, "error": error,
                        "created_at": iso(NOW), "started_at": None, "installed_at": None, "finished_at": None}
        self.installations[installation_id] = installation
        self.systems[fqdn]["installation"] = {"id": installation_id, "status": status}
        return installation

    def add_command(self, fqdn, action, status="queued"):
        command_id = len(self.commands) + 1
        command = {"id": command_id, "system": fqdn, "action": action, "status": status, "attempts": 0,
                   "user": self.user, "installation": None, "error": None, "created_at": iso(NOW),
                   "started_at": None, "finished_at": None}
        self.commands[command_id] = command
        return command

    def distro(self, url, method, path, body, query):
        parts = path.split("/")
        if len(parts) == 2 and method == "GET":  # like the server: an empty filter matches everything
            wanted = dict((k, v) for k, v in query.items() if k in ("name", "arch", "variant", "family") and v)
            return 200, [t for t in self.distro_trees.values() if all(t.get(k) == v for k, v in wanted.items())]
        if not self.admin:  # the server's words
            self.problem(url, 403, "Forbidden", "only administrators may %s distro trees" % {
                "POST": "register", "DELETE": "remove"}.get(method, "change"))
        if len(parts) == 2 and method == "POST":
            fields = dict(body)
            return 201, self.add_distro_tree(fields.pop("name"), fields.pop("arch"), fields.pop("variant", None), **fields)
        tree = self.distro_trees[int(parts[2])]
        if method == "PATCH":
            tree.update(body)
        elif method == "DELETE":
            del self.distro_trees[tree["id"]]
            return 204, None
        return 200, tree

    def provisioning(self, url, fqdn, what, body):
        system = self.systems[fqdn]
        if what == "power":
            return 202, self.add_command(fqdn, body["action"])
        holder = (system.get("reservation") or {}).get("user")
        if holder != self.user:
            self.problem(url, 403, "Forbidden", "only the current holder of %s may provision it; reserve it first"
                         % fqdn)
        wanted = body["distro_tree"]
        trees = [t for t in self.distro_trees.values()
                 if (t["id"] == wanted if isinstance(wanted, int) else t["name"] == wanted)
                 and t["arch"] == body.get("arch", system["arch"]) and body.get("variant") in (None, t["variant"])]
        if not trees:
            self.problem(url, 422, "Unprocessable", "distro_tree: no distro tree %s for %s" % (wanted, system["arch"]))
        installation = self.add_installation(fqdn, trees[0], status="queued", reservation=system["reservation"]["id"],
                                             ks_meta=body.get("ks_meta", ""),
                                             kernel_options=body.get("kernel_options", ""))
        return 202, dict(installation, kickstart_url="http://lab.test:8042/kickstart/secret")

    def provisioned(self, url, path):
        kind, number = path.split("/")[1:3]
        found, polls = ((self.installations, self.installation_polls) if kind == "installations"
                        else (self.commands, self.command_polls))
        item = found[int(number)]
        if polls.get(item["id"]):
            changes = polls[item["id"]].pop(0)
            item.update(changes() if callable(changes) else changes)
        if kind == "installations":
            self.systems[item["system"]]["installation"] = {"id": item["id"], "status": item["status"]}
            # as the server shows it to the people it is for: with the rendered kickstart
            return 200, dict(item, kickstart="rootpw --iscrypted $6$secret\nurl --url=http://lab.test/tree\n")
        elif item["status"] == "completed":
            self.systems[item["system"]]["power_state"] = "off" if item["action"] == "off" else "on"
        return 200, item

    # -- advance reservations -------------------------------------------------------------
    def ar_problems(self):
        """Like the server's advance_states.problems, for granted ARs: a held system out of the pools asked
        for, or an ACL user without reserve on it (by the system's own rules; pool policies are not modelled)."""
        found = set()
        for ar in self.ars.values():
            if ar["state"] not in ("w", "r"):
                continue
            for fqdn in ar["systems"]:
                pools = ar.get("pools") or []
                if pools and not any(fqdn in self.pools.get(p, {}).get("systems", []) for p in pools):
                    found.add((ar["id"], "%s is no longer in pool(s) %s" % (fqdn, ", ".join(pools))))
                policy = self.policies.get(fqdn)
                if policy is None or policy.get("use_pool_policy"):
                    continue
                out = [u for u in ar.get("acl") or [] if not any(
                    r["permission"] == "reserve" and (r["everybody"] or r["user"] == u or u in self.groups.get(
                        r["group"] or "", {}).get("members", [])) for r in policy["rules"])]
                if out:
                    found.add((ar["id"], "%s may no longer use %s" % (", ".join(out), fqdn)))
        return found

    @staticmethod
    def takes_force(method, path):
        operation = CONTRACT.find(method, path)[1] or {}
        return any(p["name"] == "force" and p["in"] == "query" for p in operation.get("parameters", []))

    def ar_guarded(self, url, query, body, change):
        """Make a pool or policy change; like the server, refused (409) when it would break a granted AR
        unless forced (?force=true or {"force": true}); forced, the AR goes into error."""
        forced = query.get("force") == "true" or bool(isinstance(body, dict) and body.get("force"))
        before, saved = self.ar_problems(), copy.deepcopy((self.pools, self.policies))
        answer = change()
        new = sorted(self.ar_problems() - before)
        if new and not forced:
            self.pools, self.policies = saved
            self.problem(url, 409, "Conflict", "this would break advance reservation %d (%s); repeat with force=true "
                         "to do it anyway (the reservation goes into error)" % (new[0][0], new[0][1]))
        for ar_id, reason in new:
            self.ars[ar_id].update(state="E", error_reasons=self.ars[ar_id]["error_reasons"] + [reason])
        return answer

    def add_ar(self, name, systems=("s1.lab.test",), owner=None, state="w", hours=8, start=None, **extra):
        start = start or NOW + timedelta(hours=10)
        owner = owner or self.user
        ar = {"id": len(self.ars) + 1, "name": name, "owner": owner, "account": None, "state": state,
              "start": iso(start), "end": iso(start + timedelta(hours=hours)), "duration": hours * 3600,
              "systems": list(systems), "hosts": [], "requires": None, "pools": [], "count": len(systems),
              "acl": [owner], "mail": {"events": "", "to": []}, "error_handling": "soft",
              "submitted_at": iso(NOW), "error_reasons": []}
        ar.update(extra)
        self.ars[ar["id"]] = ar
        return ar

    @staticmethod
    def moment(text):
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    def booked(self, fqdn, start, end, but=None):
        """The active AR holding fqdn somewhere in [start, end), or None."""
        for ar in self.ars.values():
            if (ar["id"] != but and ar["state"] in ("w", "r", "E") and fqdn in ar["systems"]
                    and self.moment(ar["start"]) < end and start < self.moment(ar["end"])):
                return ar
        return None

    @classmethod
    def matches(cls, tree, system):
        """Enough of the host_requires filter tree: and, and =, >=, <= on the system's fields."""
        if "and" in tree:
            return all(cls.matches(t, system) for t in tree["and"])
        have, want = system.get(tree["field"]), tree["value"]
        if tree.get("op", "=") == "=":
            return str(have) == str(want)
        return float(have) >= float(want) if tree["op"] == ">=" else float(have) <= float(want)

    def advance(self, url, method, path, body, query):
        parts = path.split("/")  # ['', 'advance-reservations', id or name]
        if len(parts) == 2 and method == "GET":
            user = query.get("user", self.user)
            return 200, [a for a in self.ars.values() if user == "*" or a["owner"] == user]
        if len(parts) == 2 and method == "POST":
            return self.ar_submit(url, body)
        key = parts[2]
        newest = sorted(self.ars.values(), key=lambda a: -a["id"])
        ar = self.ars.get(int(key)) if key.isdigit() else next((a for a in newest if a["name"] == key), None)
        if ar is None:
            self.problem(url, 404, "Not found", "no advance reservation %s" % key)
        if method == "PATCH":
            start = self.moment(ar["start"])
            end = None
            if "duration" in body:
                end = start + timedelta(seconds=body["duration"])
            elif "end" in body:
                end = self.moment(body["end"])
            if end is not None:
                for fqdn in ar["systems"]:
                    other = self.booked(fqdn, start, end, but=ar["id"])
                    if other:
                        self.problem(url, 409, "Conflict", "%s is booked by advance reservation %d from %s" % (
                            fqdn, other["id"], other["start"]))
                ar.update(end=iso(end), duration=int((end - start).total_seconds()))
            ar.update((k, v) for k, v in body.items() if k in ("acl", "name", "mail"))
            for fqdn in body.get("release") or []:  # like the server: only a system it holds, never all of them
                if fqdn not in ar["systems"] or len(ar["systems"]) == 1:
                    self.problem(url, 422, "Invalid", "release: %s cannot be given back" % fqdn, field="release")
                ar["systems"].remove(fqdn)
                ar.setdefault("released", []).append({"system": fqdn, "at": iso(NOW)})
        elif method == "DELETE":
            if ar["id"] in self.ar_bound and query.get("force") != "true":
                self.problem(url, 409, "Conflict", self.bound_detail % ar["id"])
            self.ar_bound.discard(ar["id"])
            ar["state"] = "d"
            return 204, None
        return 200, ar

    def ar_submit(self, url, body):
        arusers = self.groups.get("arusers", {}).get("members", [])
        if not self.admin and self.user not in arusers:
            self.problem(url, 403, "Forbidden", "only administrators and members of the arusers group may create "
                         "advance reservations")
        active = len([a for a in self.ars.values() if a["state"] in ("w", "r", "E")])
        limit = self.max_ars
        if limit == 0:
            self.problem(url, 429, "Limit reached", "advance reservations are switched off on this server "
                         "(max_advance_reservations: 0)")
        if limit is not None and active >= limit:
            self.problem(url, 429, "Limit reached", "%s advance reservations are active, the limit "
                         "(max_advance_reservations) is %s" % (active, limit))
        start = self.moment(body["start"]) if body.get("start") else NOW
        end = start + timedelta(seconds=body["duration"])
        eligible = sorted(s["fqdn"] for s in self.systems.values() if s["condition"] != "removed")
        ruled_out = {}
        for reason, keep in (
                ("not asked for by name", lambda s: s["fqdn"] in body["hosts"]) if body.get("hosts") else (None, None),
                ("not in the pools asked for", lambda s: any(
                    s["fqdn"] in self.pools.get(p, {}).get("systems", []) for p in body["pools"]))
                if body.get("pools") else (None, None),
                ("does not match the requirements", lambda s: self.matches(body["requires"], s)) if body.get("requires") else (None, None)):
            if reason:
                kept = [fqdn for fqdn in eligible if keep(self.systems[fqdn])]
                if len(kept) < len(eligible):
                    ruled_out[reason] = len(eligible) - len(kept)
                eligible = kept
        busy = []
        for fqdn in list(eligible):
            other = self.booked(fqdn, start, end)
            if other:
                busy.append({"system": fqdn, "from": other["start"], "until": other["end"]})
                eligible.remove(fqdn)
        count = len(body["hosts"]) if body.get("hosts") else body.get("count", 1)
        if len(eligible) < count:
            parts = "; ".join("%d %s" % (n, why) for why, n in sorted(ruled_out.items()))
            detail = "cannot grant: %d system(s) asked for, %d eligible and free%s" % (
                count, len(eligible), "; ruled out: " + parts if parts else "")
            self.problem(url, 409, "Conflict", detail, reasons={"ruled_out": ruled_out, "busy": busy})
        if body.get("validate_only"):
            return 200, {"grantable": True, "systems": eligible[:count]}
        fields = dict((k, body[k]) for k in ("account", "hosts", "requires", "pools", "acl", "error_handling")
                      if body.get(k) is not None)
        mail = dict({"events": "", "to": []}, **body.get("mail", {}))
        ar = self.add_ar(body.get("name"), eligible[:count], start=start, count=count, mail=mail, **fields)
        ar.update(end=iso(end), duration=int((end - start).total_seconds()))
        return 201, ar

    def reserve(self, url, body):
        if body.get("wait"):
            return self.reserve_waiting(url, body)
        for reservation in self.reservations:
            if reservation["system"] == body["system"] and reservation["returned_at"] is None:
                conflict = {"resource": body["system"], "start": reservation["start"], "end": reservation["end"],
                            "user": reservation["user"], "kind": "reservation", "id": reservation["id"]}
                self.problem(url, 409, "Booking conflict", "%s is reserved by %s from %s until %s" % (
                    body["system"], reservation["user"], reservation["start"], reservation["end"]), conflict=conflict)
        made = self.add_reservation(body["system"], start=NOW, request_id=body.get("request_id"))
        made["purpose"] = body.get("purpose")
        self.last_reserve_body = body
        return 201, made

    def reserve_waiting(self, url, body):
        """wait: true — like the server, a known request_id is the same reservation (200); a taken system queues it
        (202, no system yet), granted once it has been looked at `grant_after` times (None: never)."""
        for reservation in self.reservations:
            if body.get("request_id") and reservation.get("request_id") == body["request_id"]:
                return 200, reservation
        holder = next((r for r in self.reservations if r["system"] == body["system"] and r["returned_at"] is None), None)
        if holder is None:
            return 201, self.add_reservation(body["system"], start=NOW, request_id=body.get("request_id"))
        waiting = self.add_reservation(body["system"], start=NOW, request_id=body.get("request_id"))
        waiting.update(system=None, state="waiting", end=None, position=1, estimated_start=holder["end"])
        self.waits[waiting["id"]] = (body["system"], holder)
        return 202, waiting

    def looked_at(self, reservation):
        """A waiting reservation is granted after `grant_after` looks: its holder gives the system back."""
        if reservation.get("state") != "waiting" or self.grant_after is None:
            return
        self.grant_after -= 1
        if self.grant_after <= 0:
            fqdn, holder = self.waits[reservation["id"]]
            holder.update(returned_at=iso(NOW), state="returned")
            reservation.update(system=fqdn, state="active", position=None,
                               end=iso(NOW + timedelta(hours=4)))

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
