"""Delivering outbox messages: SMTP mail and signed JSON webhooks."""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import smtplib
import socket
from datetime import datetime, timezone
from email.message import EmailMessage
from email.utils import format_datetime

import requests
import urllib3

from ..domain import destinations
from ..services.messages import destinations as webhook_targets

from ..config import Settings
from ..services.messages.outbox import Delivery

log = logging.getLogger("lablease.delivery")


class DeliveryFailed(Exception):
    pass


def signature(secret: str, body: bytes) -> str:
    """The X-Lablease-Signature value: HMAC-SHA256 of the exact body, hex."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class SmtpMailer:
    def __init__(self, settings: Settings):
        self.settings = settings

    def send(self, message: Delivery) -> None:
        mail = EmailMessage()
        mail["From"] = self.settings.smtp_from
        mail["To"] = message.address
        mail["Subject"] = message.subject
        # RFC 5322 requires Date (the time it is handed to the relay); relays that add a missing one
        # use their own clock, and spam filters score its absence.
        mail["Date"] = format_datetime(datetime.now(timezone.utc))
        # The same for every attempt at one outbox message: a receiver recognises a re-send by it.
        mail["Message-ID"] = f"<lablease-{message.id}@{socket.getfqdn()}>"
        mail["X-Lablease-Event"] = message.payload.get("event", "")
        mail.set_content(message.payload.get("message", "") + "\n")
        s = self.settings
        try:
            with smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=30) as smtp:
                if s.smtp_starttls:
                    smtp.starttls()
                if s.smtp_user:
                    smtp.login(s.smtp_user, s.smtp_password)
                smtp.send_message(mail)
        except (OSError, smtplib.SMTPException) as error:
            raise DeliveryFailed(f"mail to {message.address}: {error}") from None


class WebhookPoster:
    """Posts signed JSON to webhooks: only to addresses the site allows (checked on the address it connects
    to), never following a redirect, within bounded connect and read times."""

    def __init__(self, settings: Settings):
        self.timeout = settings.webhook_timeout.total_seconds()
        self.session = requests.Session()
        self.session.trust_env = False  # an environment proxy would connect for us, unchecked
        adapter = _GuardedAdapter(settings)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)

    def send(self, message: Delivery) -> None:
        body = json.dumps(message.payload, sort_keys=True).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "lablease",
                   "X-Lablease-Event": message.payload.get("event", ""), "X-Lablease-Delivery": str(message.id)}
        if message.secret:
            headers["X-Lablease-Signature"] = signature(message.secret, body)
        try:
            destinations.split_url(message.address)
            response = self.session.post(message.address, data=body, headers=headers, allow_redirects=False,
                                         timeout=(self.timeout, self.timeout), stream=True)
        except destinations.Refused as refused:  # raised by the guarded connection, unwrapped
            raise DeliveryFailed(f"webhook {message.address} refused: {refused}") from None
        except requests.RequestException as error:
            raise DeliveryFailed(f"webhook {message.address}: {error}") from None
        response.close()  # the answer's body is not needed, nor waited for
        if response.is_redirect:
            raise DeliveryFailed(f"webhook {message.address} answered {response.status_code} (a redirect to "
                                 f"{response.headers.get('Location', '?')}); redirects are not followed")
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(f"webhook {message.address} answered {response.status_code}")


class _GuardedAdapter(requests.adapters.HTTPAdapter):
    """Connections that resolve the host once, check every address, and connect to the checked one (so a
    name cannot resolve to an allowed address for the check and an internal one for the connection)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        site = {"site": self.settings}
        http = type("GuardedHTTPConnection", (_GuardedConnection, urllib3.connection.HTTPConnection), site)
        https = type("GuardedHTTPSConnection", (_GuardedConnection, urllib3.connection.HTTPSConnection), site)
        self.poolmanager.pool_classes_by_scheme = {
            "http": type("GuardedHTTPPool", (urllib3.HTTPConnectionPool,), {"ConnectionCls": http}),
            "https": type("GuardedHTTPSPool", (urllib3.HTTPSConnectionPool,), {"ConnectionCls": https}),
        }


class _GuardedConnection:
    site: Settings

    def _new_conn(self):
        host = self._dns_host.strip("[]")
        address = webhook_targets.connect_address(self.site, host, self.port)
        try:
            sock = urllib3.util.connection.create_connection(
                (address, self.port), self.timeout, source_address=self.source_address,
                socket_options=self.socket_options)
        except OSError as error:
            raise urllib3.exceptions.NewConnectionError(self, f"cannot connect to {address}: {error}") from error
        return sock  # TLS (https) still checks the certificate against the URL's host name


def senders(settings: Settings) -> dict:
    return {"mail": SmtpMailer(settings), "webhook": WebhookPoster(settings)}
