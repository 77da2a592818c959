"""The agent's installer proxy: a lab's installers reach the server only through their agent.

Only the kickstart (GET) and the installer callbacks (POST) pass, with their query string (the
installation's own token, which the server checks) and body; every other path is 404 here, so
the rest of the API is not reachable from the lab's installation network.
"""
from __future__ import annotations

import json
import logging
import re
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..services.provisioning.installations import EVENTS
from ..services.provisioning.labs import AGENT_HEADER

log = logging.getLogger("lablease.agent.proxy")
_EVENT = "|".join(EVENTS)
ALLOWED = {"GET": re.compile(r"/api/v1/installations/[0-9]{1,18}/kickstart"),
           "POST": re.compile(rf"/api/v1/(installations|recipes)/[0-9]{{1,18}}/({_EVENT})")}
MAX_BODY = 1 << 16  # a callback's body is small; nothing larger is passed on


def start(listen: str, server) -> ThreadingHTTPServer:
    host, _, port = listen.rpartition(":")
    httpd = ThreadingHTTPServer((host.strip("[]"), int(port)), _handler(server))
    threading.Thread(target=httpd.serve_forever, name="lablease-agent-proxy", daemon=True).start()
    log.info("installer proxy on %s", listen)
    return httpd


def _handler(server):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self._pass("GET")

        def do_POST(self):
            self._pass("POST")

        def _pass(self, method: str) -> None:
            path, _, query = self.path.partition("?")
            if not ALLOWED[method].fullmatch(path):
                return self._answer(404, "application/problem+json", json.dumps({
                    "type": "about:blank", "title": "Not Found", "status": 404,
                    "detail": "a lab agent passes on only installers' kickstarts and callbacks"}).encode())
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._answer(413, "text/plain", b"body too large\n")
            body = self.rfile.read(length) if length else None
            request = urllib.request.Request(server.url + path + (f"?{query}" if query else ""), data=body,
                                             method=method, headers={
                                                 "Content-Type": self.headers.get("Content-Type") or
                                                 "application/json",
                                                 AGENT_HEADER: server.token})  # only its own lab's installations
            try:
                with urllib.request.urlopen(request, timeout=60, context=server.context) as answer:
                    self._answer(answer.status, answer.headers.get("Content-Type") or "", answer.read())
            except urllib.error.HTTPError as error:
                self._answer(error.code, error.headers.get("Content-Type") or "", error.read())
            except OSError as error:
                self._answer(502, "text/plain", f"the lablease server cannot be reached: {error}\n".encode())

        def _answer(self, status: int, media: str, data: bytes) -> None:
            # Never the query string: it holds the installation's secret token.
            log.info("installer %s %s %s: %s", self.address_string(), self.command, self.path.partition("?")[0],
                     status)
            self.send_response(status)
            if media:
                self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):  # _answer logs each request, without its token; http.server's stderr
            pass                               # lines would print the query string

    return Handler
