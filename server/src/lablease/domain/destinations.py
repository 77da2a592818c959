"""Where the server may send a webhook: never into the lab's own network unless the site says so.

A webhook URL is chosen by any user, and the server (inside the lab) posts to
it: without a rule it is a way to reach the metadata service, the server's
own port or any internal host. The rule is one pure function over the URL's
parts and the addresses its host has, used both when a URL is set (the API)
and right before each delivery (the worker, on the address it connects to).
"""
from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOCAL_NAMES = ("localhost", "localhost.", "localhost.localdomain")


class Refused(ValueError):
    """A destination the server will not send to; the message says why."""


def parse_networks(values, name: str = "webhook_allowed_networks") -> tuple[Network, ...]:
    """CIDR blocks (`10.1.0.0/16`, `127.0.0.1/32`, `fd00::/8`); a bare address is a block of one."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(str(value).strip(), strict=False))
        except ValueError:
            raise ValueError(f"{name}: {value!r} is not a network in CIDR form (like 10.1.0.0/16)") from None
    return tuple(networks)


def split_url(url: str) -> tuple[str, int]:
    """The host and port of an http(s) URL without credentials, or Refused saying what is wrong."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise Refused(f"is not a valid URL ({error})") from None
    if parts.scheme not in ("http", "https"):
        raise Refused("must be an http:// or https:// URL")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise Refused("must not carry credentials (user:password@); sign deliveries with webhook_secret instead")
    if not parts.hostname:
        raise Refused("has no host")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def literal_address(host: str) -> Address | None:
    """The address a host names by itself: IPv4 in any form inet_aton takes (2130706433, 0x7f.1,
    0177.0.0.1), IPv6 (the brackets already gone), or None for a name."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    try:
        numbers = [_c_integer(part) for part in parts]
    except ValueError:
        return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = 0
    for n in head:
        value = value * 256 + n
    return ipaddress.IPv4Address(value * 256 ** (5 - len(numbers)) + last)


def _c_integer(text: str) -> int:
    """A number as C's strtoul reads it with base 0: 0x.. hex, 0.. octal, else decimal."""
    if text.lower().startswith("0x"):
        return int(text[2:] or "0", 16)
    if len(text) > 1 and text.startswith("0"):
        return int(text[1:], 8)
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def _embedded(address: Address) -> Address:
    """The IPv4 address an IPv6 one carries (::ffff:a.b.c.d, 6to4, Teredo's client), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
    return address


def kind_of(address: Address) -> str | None:
    """Why an address is not a public one ("loopback", "private"...), or None when it is."""
    checks = (("unspecified", address.is_unspecified), ("loopback", address.is_loopback),
              ("link-local", address.is_link_local), ("multicast", address.is_multicast),
              ("unique-local", isinstance(address, ipaddress.IPv6Address)
               and address in ipaddress.IPv6Network("fc00::/7")),
              ("reserved", address.is_reserved), ("private", address.is_private),
              ("not globally routable", not address.is_global))
    return next((kind for kind, hit in checks if hit), None)


def refusal(address: Address, allowed: tuple[Network, ...]) -> str | None:
    """Why the server may not connect to this address, or None when it may."""
    for candidate in {address, _embedded(address)}:
        if any(candidate.version == net.version and candidate in net for net in allowed):
            return None
    for candidate in (_embedded(address), address):
        kind = kind_of(candidate)
        if kind:
            article = "an" if kind[0] in "aeiou" else "a"
            return (f"{address} is {article} {kind} address, which webhooks may not reach "
                    "(unless the site lists its network in webhook_allowed_networks)")
    return None


def check(url: str, addresses, allowed: tuple[Network, ...]) -> None:
    """Refused unless the URL is http(s) without credentials and every address its host has (its literal
    address, or what its name resolves to) may be reached."""
    host, _ = split_url(url)
    literal = literal_address(host)
    found = [literal] if literal is not None else list(addresses)
    if host.lower() in LOCAL_NAMES or host.lower().endswith(".localhost"):
        # localhost is loopback by definition (RFC 6761), whatever a resolver says
        found += [ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1")]
    for address in found:
        why = refusal(address, allowed)
        if why:
            raise Refused(f"{host} is or resolves to {why}" if literal is None else why)
