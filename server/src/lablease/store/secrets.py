"""Secrets at rest: webhook secrets and power/netboot credentials are stored encrypted under the site key.

The site key is the `secret_key` setting, or a key generated once in
`data_dir/secret.key` (mode 0600, in a 0700 directory). Stored secrets are
Fernet tokens (AES-128-CBC + HMAC-SHA256, from the maintained `cryptography`
library) under a key derived from the site key with HKDF, so the same site
key also serves installation tokens without the two uses meeting. A copy
of the database alone reveals none of them.

The column types below do it for every reader and writer: a Database is
given its SecretBox (`use_secrets`) by whoever opens it with the site's
settings (the API app, the worker, `lablease-server`). Values written
before encryption existed are plain text: they are read as they are and
sealed the next time they are written (`lablease-server init` rewrites them
all, see `seal_all`).
"""
from __future__ import annotations

import base64
import logging
import os
import secrets as random
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy import JSON, String
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator

log = logging.getLogger("lablease.secrets")
SEALED = "fernet:"  # stored values carrying this prefix are encrypted; others are legacy plain text
SECRET_KEYS = frozenset({"password", "pass", "secret", "token", "credentials", "key"})  # in power/netboot


def is_secret_key(name: str) -> bool:
    return name.lower() in SECRET_KEYS


def private_dir(path: Path) -> Path:
    """A directory only the server's user can enter (0700 when this call makes it)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def private_file(path: Path) -> None:
    """Make an empty file readable by the server's user only, unless it exists already."""
    private_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def site_key(settings) -> bytes:
    """The site key: the `secret_key` setting, or a file made once in the data dir (0600)."""
    if settings.secret_key:
        return settings.secret_key.encode()
    path = Path(settings.data_dir) / "secret.key"
    if not path.exists():
        private_dir(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(random.token_urlsafe(48))
    return path.read_text().strip().encode()


class SecretBox:
    """Seals and opens stored secrets; the key is derived on first use (so tests that store none need none)."""

    def __init__(self, settings):
        self.settings = settings
        self._fernet: Fernet | None = None

    @property
    def fernet(self) -> Fernet:
        if self._fernet is None:
            derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                           info=b"lablease stored secrets v1").derive(site_key(self.settings))
            self._fernet = Fernet(base64.urlsafe_b64encode(derived))
        return self._fernet

    def seal(self, value: str) -> str:
        if value.startswith(SEALED):
            return value
        return SEALED + self.fernet.encrypt(value.encode()).decode()

    def open(self, value: str, where: str) -> str:
        if not value.startswith(SEALED):
            return value  # stored before secrets were encrypted
        try:
            return self.fernet.decrypt(value[len(SEALED):].encode()).decode()
        except InvalidToken:
            log.warning("a stored secret (%s) cannot be decrypted with this site's key; was secret_key changed?",
                        where)
            return value


def use_secrets(db, box: SecretBox) -> None:
    """Give a Database the site's SecretBox: every engine's dialect carries it to the column types."""
    for engine in db.engines:
        engine.dialect.lablease_secrets = box


def _box(dialect) -> SecretBox | None:
    return getattr(dialect, "lablease_secrets", None)


def _need_box(dialect) -> SecretBox:
    box = _box(dialect)
    if box is None:
        raise RuntimeError("a secret is being stored without the site key: open the database with use_secrets()")
    return box


class SecretText(TypeDecorator):
    """A text secret, sealed at rest."""

    impl = String(1000)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return _need_box(dialect).seal(value) if value else value

    def process_result_value(self, value, dialect):
        box = _box(dialect)
        return box.open(value, "webhook secret") if value and box is not None else value


class SecretJson(TypeDecorator):
    """Settings (power, netboot) whose secret keys (password, token...) are sealed at rest, the rest plain."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect):
        return dialect.type_descriptor(JSONB() if dialect.name == "postgresql" else JSON())

    def process_bind_param(self, value, dialect):
        if not value or not any(is_secret_key(k) and isinstance(v, str) and v for k, v in value.items()):
            return value
        box = _need_box(dialect)
        return {k: box.seal(v) if is_secret_key(k) and isinstance(v, str) and v else v for k, v in value.items()}

    def process_result_value(self, value, dialect):
        box = _box(dialect)
        if not value or box is None:
            return value
        return {k: box.open(v, f"setting {k}") if is_secret_key(k) and isinstance(v, str) else v
                for k, v in value.items()}
