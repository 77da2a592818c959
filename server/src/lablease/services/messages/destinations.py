"""Webhook destinations checked against the site's networks (the rule: domain/destinations.py).

The API checks a URL when it is set; the sender checks again right before it
connects, on the addresses it is about to use, since what a name resolves to
can change in between.
"""
from __future__ import annotations

import ipaddress
import socket

from ...domain import destinations
from ...domain.errors import Invalid


def resolve(host: str, port: int) -> list:
    """Every address the host has now (empty when the name does not resolve)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in found))


def check_url(settings, url: str | None, field: str = "webhook_url") -> None:
    """A webhook URL a user sets: 422 naming the field and the reason when the server may not post to it.

    A name that does not resolve yet is accepted: nothing can be checked now, and delivery checks again.
    """
    if not url:
        return
    try:
        host, port = destinations.split_url(url)
        destinations.check(url, resolve(host, port), settings.webhook_allowed_networks)
    except destinations.Refused as refused:
        raise Invalid(field, str(refused)) from None


def connect_address(settings, host: str, port: int) -> str:
    """The address to connect to for a delivery: resolved once, checked, then used as it is.

    Raises destinations.Refused when the host has no address or any of them may not be reached.
    """
    literal = destinations.literal_address(host)
    addresses = [literal] if literal is not None else resolve(host, port)
    if not addresses:
        raise destinations.Refused(f"{host} does not resolve")
    destinations.check(f"http://{_bracketed(host)}/", addresses, settings.webhook_allowed_networks)
    return str(addresses[0])


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
