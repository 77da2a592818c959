# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lablease.lab.events: an Event-Driven Ansible source reading a lablease server's event feed."""

from __future__ import absolute_import, division, print_function

import asyncio
import json
import logging
import os
import ssl
import tempfile
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

DOCUMENTATION = r"""
---
short_description: Read the events of a lablease server (reservations, loans, jobs, health checks)
description:
  - An event source plugin for Event-Driven Ansible (ansible-rulebook). It reads the server's event feed,
    C(GET /api/v1/events), with long polls over HTTP or HTTPS, so it needs no inbound port.
  - It puts one event on the queue per lablease event, as the server's webhooks send it - C(event) (the kind,
    for example V(reservation.ending), V(reservation.returned), V(loan.ending), V(job.finished),
    V(system.health_failed), V(recipe.reserved)), C(at), C(user), C(message), the fields of its kind (C(reservation), C(system),
    C(end), C(job), C(reason)...) - and its C(cursor).
  - The token decides what it reads - a user's events only (their reservations, loans, jobs, the systems they
    own), or an administrator's, every event.
  - With O(cursor_file), the cursor of the last event put on the queue is kept in that file (written
    atomically after each event), and a restarted source reads on from it - an event is then put on the queue at
    least once. When the server no longer keeps that cursor (older than its history, C(events_keep)), the source
    logs what was lost and reads on from the oldest event the server keeps.
  - While the server cannot be reached it logs the error and tries again every O(retry_delay) seconds; a
    token the server refuses, or an option it refuses, stops the source with the server's reason.
options:
  url:
    description:
      - The lablease server, for example V(https://lablease.example.com).
      - If not set, the environment variable E(LABLEASE_URL) is used.
    type: str
  token:
    description:
      - The API token the events are read with.
      - If not set, the environment variable E(LABLEASE_TOKEN) is used.
    type: str
  cursor_file:
    description:
      - A file keeping the cursor of the last event put on the queue, read when the source starts.
      - Without it, or while the file does not exist yet, the source starts as O(start) says.
    type: str
  start:
    description:
      - Where to start when there is no cursor to read on from - V(now) for only events to come, V(oldest) from
        the oldest event the server keeps.
    type: str
    choices: [now, oldest]
    default: now
  wait:
    description:
      - How many seconds each long poll waits for an event (at most 300).
    type: int
    default: 30
  retry_delay:
    description:
      - Seconds between attempts while the server cannot be reached.
    type: int
    default: 5
  validate_certs:
    description:
      - Check the server's TLS certificate.
    type: bool
    default: true
  ca_path:
    description:
      - A PEM file of the certificate authorities to trust for the server's certificate.
    type: str
"""

EXAMPLES = r"""
- name: React to lablease
  hosts: all
  sources:
    - lablease.lab.events:
        url: https://lablease.example.com
        token: "{{ LABLEASE_TOKEN }}"
        cursor_file: /var/lib/eda/lablease.cursor
  rules:
    - name: Extend a CI reservation that is about to end
      condition: event.event == "reservation.ending"
      action:
        run_playbook:
          name: lablease.lab.eda_extend_reservation
"""

LOG = logging.getLogger(__name__)


class Refused(Exception):
    """The server refused the request for good (a token, an option): trying again would not help."""


def _load_cursor(path):
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        cursor = handle.read().strip() or None
    if cursor is not None and not cursor.isdigit():
        raise ValueError("the cursor file %s holds %r, not a cursor (an event's number): remove it to start "
                         "afresh" % (path, cursor[:40]))
    return cursor


def _save_cursor(path, cursor):
    """Atomically: a crash leaves the old cursor or the new one, never half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".cursor-")
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(cursor + "\n")
    os.replace(temporary, path)


def _context(args):
    if not args.get("validate_certs", True):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=args.get("ca_path"))


def _read(url, token, after, wait, context):
    """One long poll (blocking; run in a thread): the decoded answer, or a Gone/Refused/OSError."""
    query = {"wait": str(wait)}
    if after is not None:
        query["after"] = after
    base = url.rstrip("/")
    if base.endswith("/api/v1"):  # the URL as the modules take it, with or without the API's prefix
        base = base[:-len("/api/v1")]
    request = Request(base + "/api/v1/events?" + urlencode(query),
                      headers={"Authorization": "Bearer " + token, "Accept": "application/json",
                               "User-Agent": "lablease-eda"})
    try:
        with urlopen(request, timeout=wait + 30, context=context) as answer:
            return json.loads(answer.read().decode("utf-8"))
    except HTTPError as error:
        body = error.read().decode("utf-8", "replace")
        try:
            problem = json.loads(body)
        except ValueError:
            problem = {"detail": body[:500]}
        if error.code == 410:
            return {"gone": problem}
        if error.code >= 500 or error.code == 429:
            raise OSError("the server answered %s: %s" % (error.code, problem.get("detail"))) from None
        raise Refused("the server refused reading its events (%s): %s" % (error.code, problem.get("detail"))) from None


async def main(queue, args):
    """Put each lablease event on the queue, in order, resuming from the cursor file."""
    url = args.get("url") or os.environ.get("LABLEASE_URL")
    token = args.get("token") or os.environ.get("LABLEASE_TOKEN")
    if not url or not token:
        raise ValueError("lablease.lab.events needs url and token (or LABLEASE_URL and LABLEASE_TOKEN)")
    wait = min(int(args.get("wait", 30)), 300)
    retry_delay = int(args.get("retry_delay", 5))
    cursor_file = args.get("cursor_file")
    context = _context(args)
    after = _load_cursor(cursor_file)
    if after is None and args.get("start", "now") == "now":
        after = "now"
    while True:
        try:
            answer = await asyncio.to_thread(_read, url, token, after, wait, context)
        except (OSError, URLError, ValueError) as error:
            LOG.warning("lablease events from %s: %s; trying again in %s s", url, error, retry_delay)
            await asyncio.sleep(retry_delay)
            continue
        if "gone" in answer:
            oldest = int(answer["gone"]["oldest"])
            LOG.warning("lablease events: %s; reading on from the oldest kept", answer["gone"].get("detail"))
            after = str(oldest - 1)
            continue
        for event in answer["events"]:
            await queue.put(event)
            if cursor_file:
                _save_cursor(cursor_file, event["cursor"])
        after = answer["cursor"]
        if cursor_file and not answer["events"] and after != _load_cursor(cursor_file):
            _save_cursor(cursor_file, after)  # past the events of others: a restart need not read them again


if __name__ == "__main__":
    # Try it by hand: LABLEASE_URL=... LABLEASE_TOKEN=... python events.py prints the events as they come.
    class _Printer:
        async def put(self, event):
            print(json.dumps(event), flush=True)

    asyncio.run(main(_Printer(), {"start": "oldest"}))
