"""PostgreSQL backups with PostgreSQL's own tools: pg_dump (custom format) and pg_restore.

They get the database as a libpq URL without its password, which goes in
PGPASSWORD, so it never shows in the process list. pg_dump must be of the
server's major version or newer (Debian's postgresql-client-NN).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from sqlalchemy.engine import make_url

from .db import libpq_params

COMMAND = "pg_dump --format=custom --no-owner --no-privileges --file=FILE postgresql://USER@HOST/DB"


class ToolFailed(Exception):
    pass


def dump(url: str, target: Path) -> None:
    _run("pg_dump", "--format=custom", "--no-owner", "--no-privileges", f"--file={target}", url=url)


def restore(url: str, dump_file: Path, clean: bool) -> None:
    """Into an empty database; with `clean`, lablease's tables are dropped first (a forced restore)."""
    extra = ("--clean", "--if-exists") if clean else ()
    _run("pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction", *extra,
         str(dump_file), url=url)


def _run(tool: str, *args: str, url: str) -> None:
    if shutil.which(tool) is None:
        raise ToolFailed(f"{tool} is not installed (Debian: postgresql-client); to back up by hand: {COMMAND}")
    from psycopg.conninfo import make_conninfo

    parsed = make_url(url)
    libpq = make_conninfo("", **libpq_params(url, password=False))  # all of a multi-host URL's hosts
    env = {**os.environ}
    if parsed.password:
        env["PGPASSWORD"] = parsed.password
    result = subprocess.run([tool, *args, f"--dbname={libpq}"], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise ToolFailed(f"{tool} failed: {result.stderr.strip()[-500:]}")
