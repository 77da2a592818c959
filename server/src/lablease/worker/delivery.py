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

from ..config import Settings
from ..services.outbox import Delivery

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
    def __init__(self, settings: Settings):
        self.timeout = settings.duration("webhook_timeout").total_seconds()
        self.session = requests.Session()

    def send(self, message: Delivery) -> None:
        body = json.dumps(message.payload, sort_keys=True).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "lablease",
                   "X-Lablease-Event": message.payload.get("event", ""), "X-Lablease-Delivery": str(message.id)}
        if message.secret:
            headers["X-Lablease-Signature"] = signature(message.secret, body)
        try:
            response = self.session.post(message.address, data=body, headers=headers, timeout=self.timeout)
        except requests.RequestException as error:
            raise DeliveryFailed(f"webhook {message.address}: {error}") from None
        if not 200 <= response.status_code < 300:
            raise DeliveryFailed(f"webhook {message.address} answered {response.status_code}")


def senders(settings: Settings) -> dict:
    return {"mail": SmtpMailer(settings), "webhook": WebhookPoster(settings)}
