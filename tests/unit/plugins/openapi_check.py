# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Holds requests and answers to the server's OpenAPI description.

ansible-test runs the unit tests on the collection alone, without the server, so they talk to a
fake (fake_api.py). Every request the modules make and every answer the fake gives is checked
against openapi.json, a copy of the server's description that tests/server/unit/test_openapi_copy.py
keeps equal to the one the server generates. The server's integration tests check the real answers
against the same description (tests/server/integration/conftest.py), so fake, description and server
cannot drift apart: a route, status, query parameter, request body or answer field one of them does not
have fails a test. Objects are closed (a field the description does not name fails); problem documents
stay open, since RFC 9457 lets them carry more members.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from jsonschema import Draft202012Validator

COPY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openapi.json")


def closed(schema):
    """The schema with every object limited to the properties it names."""
    if isinstance(schema, dict):
        out = dict((key, closed(value)) for key, value in schema.items())
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(value) for value in schema]
    return schema


def violations(schema, value):
    errors = Draft202012Validator(schema).iter_errors(value)
    return sorted("%s: %s" % ("/".join(str(p) for p in error.absolute_path) or "(top)", error.message) for error in errors)


class Contract:
    """One OpenAPI description; paths are given without the /api/v1 prefix."""

    def __init__(self, spec):
        self.spec = spec
        # literal paths before templated ones (/jobs/queue before /jobs/{id})
        self.routes = sorted(((re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path)) + "$"), path, ops)
                              for path, ops in spec["paths"].items()), key=lambda route: route[1].count("{"))

    def resolved(self, schema):
        """The schema, able to follow its #/components/... references (the Job schema's are recursive,
        so they are left to the validator, which resolves them against this root as it needs them)."""
        if isinstance(schema, dict):
            return dict(schema, components=self.spec["components"])
        return schema

    def find(self, method, path):
        """(template, operation) of the route for method and path, or (None, None)."""
        for regex, template, operations in self.routes:
            if regex.match("/api/v1" + path) and method.lower() in operations:
                return template, operations[method.lower()]
        return None, None

    def operation(self, method, path):
        template, op = self.find(method, path)
        assert op is not None, "the server has no route %s /api/v1%s" % (method, path)
        return template, op

    def check_request(self, method, path, query, body, content_type):
        """The request as the server would take it: known route, query parameters and JSON body."""
        template, op = self.operation(method, path)
        known = [p["name"] for p in op.get("parameters", []) if p["in"] == "query"]
        unknown = sorted(set(query) - set(known))
        assert not unknown, "%s %s: the server takes no query parameter %s (only %s)" % (
            method, template, ", ".join(unknown), ", ".join(known) or "none")
        request = op.get("requestBody", {}).get("content", {})
        if body is None or content_type != "application/json":
            return
        assert "application/json" in request, "%s %s: the server takes no JSON body" % (method, template)
        wrong = violations(self.resolved(request["application/json"]["schema"]), body)
        assert not wrong, "%s %s: the server would refuse the body %r: %s" % (method, template, body, "; ".join(wrong))

    def check_answer(self, method, path, status, body, problem=False, who="the fake"):
        """The answer (status and JSON body, or a problem document) as the description has it."""
        template, op = self.operation(method, path)
        response = op["responses"].get(str(status))
        assert response is not None, "%s %s: the description has no %s answer (only %s)" % (
            method, template, status, ", ".join(sorted(op["responses"])))
        content = response.get("content", {})
        media = "application/problem+json" if problem else "application/json"
        if not content:
            assert body is None, "%s %s: the description has no body in the %s answer" % (method, template, status)
            return
        assert media in content, "%s %s: the description's %s answer is not %s" % (method, template, status, media)
        schema = self.resolved(content[media]["schema"])
        wrong = violations(schema if problem else closed(schema), body)
        assert not wrong, "%s %s: %s answered %s %r, which the description does not allow: %s" % (
            method, template, who, status, body, "; ".join(wrong))


def load_copy():
    with open(COPY) as handle:
        return Contract(json.load(handle))
