"""Property-based fuzzing of the whole API from its own OpenAPI description (schemathesis).

A real `lablease-server serve` on SQLite; every operation of /api/v1/openapi.json is called with
requests generated from its description, valid ones and invalid ones, as a normal user and as an
admin. Every answer must keep the description's promises: no 5xx, only documented statuses and
content types, bodies matching the response schemas, valid requests taken and invalid ones refused,
`Allow` naming the documented methods. The examples per operation are bounded and derandomized, and
Hypothesis keeps no example database, so a run is the same everywhere (docs/api.md, "Fuzzing").
"""
from __future__ import annotations

import os
import re

import pytest
import requests
import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance

from lablease.api.openapi import build_spec
from tests.support.live import LiveServer

# Random requests per operation and user in the fuzzing phase; LABLEASE_FUZZ_EXAMPLES=100 goes deeper by hand.
MAX_EXAMPLES = int(os.environ.get("LABLEASE_FUZZ_EXAMPLES", "12"))


def config(phase: str) -> schemathesis.Config:
    """One phase of schemathesis' run: "coverage" (every boundary and every invalid form the schema defines,
    with the description's examples) or "fuzzing" (MAX_EXAMPLES random requests, valid and invalid)."""
    phases = {"examples": {"enabled": phase == "coverage"}, "coverage": {"enabled": phase == "coverage"},
              "fuzzing": {"enabled": phase == "fuzzing"}, "stateful": {"enabled": False}}
    return schemathesis.Config.from_dict({**SETTINGS, "phases": phases})


SETTINGS = {
    "seed": 13,
    # The token is sent with every request (the user's or the admin's): the Authorization header is not
    # generated. Requests without one are test_openapi.py's (every route answers 401 as problem+json).
    # Text is UTF-8 without NUL (docs/api.md): no lone surrogates, no "\x00".
    "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none",
                   "with-security-parameters": False, "codec": "utf-8", "allow-x00": False},
    # Every check runs, with these exceptions:
    "checks": {
        # Replaced by positive_data_acceptance_but_meaning (below).
        "positive_data_acceptance": {"enabled": False},
        # ignored_auth re-sends each request without its token, and use_after_free /
        # ensure_resource_availability follow links between operations (stateful runs): they are
        # covered by tests/server/integration/test_openapi.py (every route answers 401 without a
        # token) and by the resource tests, and would double the run.
        "ignored_auth": {"enabled": False},
        "use_after_free": {"enabled": False},
        "ensure_resource_availability": {"enabled": False},
    },
}

# A request the description calls valid may still be refused (422) for what a JSON schema cannot say:
# these reasons (the problem's `reason`) are the whole list. Any other 422 to a valid request means
# the description and the server disagree, and fails the run.
MEANING = re.compile("|".join([
    r"^no (user|group|pool|system|distro tree) (named )?",  # a name that names nothing (yet)
    r"^no (active )?advance reservation [0-9]+",  # an id that names nothing (yet)
    r"is in the past", r"^must be in the future", r"must be after (start|the start|from)",  # the clock
    r"^the (reservation|loan) has no end to extend$",
    r"give two of the three, or three that agree$",  # an advance reservation's start + duration = end
    r"^unlimited reservations are not allowed on this site$", r"^cannot be unlimited",  # the site's settings
    r"^only a running recipe can complete",  # the recipe's state
    r"^must be (before|after) (until|free_from|now) \(",  # the clock, or one field against another
    r"which webhooks may not reach",  # where a webhook's host name resolves to (docs/access.md)
    r"holds a control character",  # per word of ks_meta and kernel options (domain/boot_text.py)
    r"which XML cannot carry$",  # a job's text must export as XML: no lone surrogate or C0 control (jobxml)
    r"^is not a cursor this list gave out",  # an after= that no page's Link header gave (docs/api.md)
    r"differs from the request_id .* of the same request",  # an Idempotency-Key against the body's request_id
    r"was made without a heartbeat interval$",  # the reservation's own state (a heartbeat to one without)
    r"^a (timeline shows|report covers) at most [0-9]+ days$",  # start against end (or from against until)
    r"unknown architecture '",  # arches are data: an arch is known once an administrator adds it (docs/api.md)
    r"must be one XML element in a namespace of its own",  # a job's extension element is XML the parser reads
]))


# 410 for a feed cursor the server's history does not hold: older than the oldest event kept, or past the
# newest (never given by this feed); which cursors those are is the database's state (docs/api.md, "Events").
GONE = re.compile(r"^cursor [0-9]+ (has expired: the oldest event kept is|is past the newest event)")


# Fields holding a document in the job grammar, which the description gives as a bare object (or string) and
# the job parser checks (a health check's job is job XML or job JSON as POST /jobs takes it; a wait's
# `requires` is a hostRequires filter in job JSON form; tests/server/jobxml covers that grammar): a refusal
# naming such a field is meaningful.
DOCUMENTS = {"/api/v1/health-checks": "job", "/api/v1/health-checks/{name}": "job", "/api/v1/reservations": "requires"}
# A batch's requests are given as bare {method, path, query, body}: which paths are routes, and what each route
# takes, is the route table's and each route's own check. A refusal naming its request (`request`: its place in
# the batch, docs/api.md) is meaningful.
BATCH = "/api/v1/batch"


def positive_data_acceptance_but_meaning(ctx, response, case):
    """positive_data_acceptance, except for a 422 whose reason is one of MEANING, or one naming a
    document field of DOCUMENTS, and a 410 of GONE."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except AssertionError:
        if response.status_code == 422 and MEANING.search(_reason(response)):
            return None
        if response.status_code == 410 and GONE.search(_detail(response)):
            return None
        document = DOCUMENTS.get(getattr(case.operation, "path", ""))
        if response.status_code == 422 and document and _field(response).split(".")[0] == document:
            return None
        if response.status_code == 422 and getattr(case.operation, "path", "") == BATCH and _names_request(response):
            return None
        raise


def _names_request(response) -> bool:
    try:
        return isinstance(response.json().get("request"), int)
    except ValueError:
        return False


def _field(response) -> str:
    try:
        return str(response.json().get("field", ""))
    except ValueError:
        return ""


def _detail(response) -> str:
    try:
        return str(response.json().get("detail", ""))
    except ValueError:
        return ""


def _reason(response) -> str:
    try:
        return str(response.json().get("reason", ""))
    except ValueError:
        return ""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("fuzz"))  # SQLite in its data directory
    live.start()
    try:
        live.add_user("alice")
        yield live
    finally:
        live.stop()


# The description the server serves is built from the route table (api/openapi.py): loading it here
# makes one test per operation at collection; test_the_served_description_is_the_one_fuzzed checks it is
# the same as the live server's /api/v1/openapi.json.
DESCRIPTION = build_spec()
coverage = schemathesis.openapi.from_dict(DESCRIPTION, config=config("coverage"))
fuzzing = schemathesis.openapi.from_dict(DESCRIPTION, config=config("fuzzing"))


def test_the_served_description_is_the_one_fuzzed(server):
    served = requests.get(server.url + "/api/v1/openapi.json", timeout=30).json()
    assert {**served, "servers": None} == {**DESCRIPTION, "servers": None}


# The coverage phase's cases are the schema's, whoever sends them: as the admin they reach every operation's
# deepest checks (a normal user's are mostly refused 403 before them). The random requests go as both.
@pytest.mark.parametrize("user", ["admin"])  # (parametrized: each item is then named by its operation)
@coverage.parametrize()
def test_the_api_keeps_its_description_at_every_boundary(case, user, server):
    call_and_validate(case, user, server)


@pytest.mark.parametrize("user", ["alice", "admin"])  # a normal user, and an admin
@fuzzing.parametrize()
def test_the_api_keeps_its_description(case, user, server):
    call_and_validate(case, user, server)


def call_and_validate(case, user: str, server) -> None:
    # A job's XML is a string to JSON Schema: its grammar (RELAX NG, docs/jobs.md) cannot be generated from
    # the description, so a "valid" XML job is random text; tests/server/jobxml try XML jobs, good and hostile.
    xml = case.media_type == "application/xml"
    if case.operation.path.endswith("/events") and str((case.query or {}).get("wait", "")).isdigit():
        case.query["wait"] = 0  # a long poll on a quiet server waits it all out (test_events_feed.py waits)
    case.call_and_validate(base_url=server.url, headers={"Authorization": f"Bearer {server.tokens[user]}"},
                           additional_checks=[] if xml else [positive_data_acceptance_but_meaning], timeout=30)
