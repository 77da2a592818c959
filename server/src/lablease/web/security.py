"""Cookies, CSRF tokens, flash messages and the headers every page carries.

CSRF: each form carries `csrf`, an HMAC (site key) of the session's secret, or before sign-in of a random
`lablease_presession` cookie: another site can neither read it nor compute it. The session cookie is also
SameSite=Lax, so a cross-site POST does not carry it at all (two independent guards).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets

from werkzeug.wrappers import Request, Response

SESSION_COOKIE = "lablease_session"
PRESESSION_COOKIE = "lablease_presession"
FLASH_COOKIE = "lablease_flash"

# No inline script or style anywhere: templates use classes, SVG presentation attributes, and files in /static.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class Keys:
    """HMACs under the site key (store/secrets.py site_key), one purpose each."""

    def __init__(self, key: bytes):
        self.key = key

    def sign(self, purpose: str, value: str) -> str:
        return hmac.new(self.key, f"{purpose}\0{value}".encode(), hashlib.sha256).hexdigest()

    def csrf(self, seed: str) -> str:
        return self.sign("csrf", seed)

    def csrf_ok(self, seed: str | None, given: str | None) -> bool:
        return bool(seed and given) and hmac.compare_digest(self.csrf(seed), given)

    def pack_flash(self, messages: list[tuple[str, str]]) -> str:
        data = base64.urlsafe_b64encode(json.dumps(messages).encode()).decode()
        return data + "." + self.sign("flash", data)

    def unpack_flash(self, cookie: str | None) -> list[tuple[str, str]]:
        data, _, mac = (cookie or "").partition(".")
        if not data or not hmac.compare_digest(self.sign("flash", data), mac):
            return []
        try:
            return [(str(c), str(t)) for c, t in json.loads(base64.urlsafe_b64decode(data))][:5]
        except (ValueError, TypeError):
            return []


def secure(request: Request, public_url: str) -> bool:
    """Cookies are Secure when the page is served over https (directly or per the public URL)."""
    return request.scheme == "https" or public_url.startswith("https:")


def set_cookie(response: Response, request: Request, public_url: str, name: str, value: str,
               max_age: int | None = None) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="Lax",
                        secure=secure(request, public_url))


def clear_cookie(response: Response, request: Request, public_url: str, name: str) -> None:
    response.delete_cookie(name, path="/", httponly=True, samesite="Lax", secure=secure(request, public_url))


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


def protect(response: Response, private: bool = True) -> Response:
    response.headers.update(HEADERS)
    if private:  # pages show one person's data: never kept by a shared cache
        response.headers["Cache-Control"] = "no-store"
    return response
