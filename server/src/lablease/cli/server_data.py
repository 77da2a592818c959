"""`lablease-server backup`, `restore` and `db downgrade`: the commands that copy or rewind a site's data."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..config import Settings, url_without_password
from ..store import backup, migrate
from ..store.db import Database


def cmd_backup(settings: Settings, args) -> None:
    manifest = backup.backup(settings, Path(args.file))
    key = {"setting": "not included: it is the secret_key setting, keep that setting with the backup",
           "none": "none yet"}.get(manifest["site_key"], "included")
    print(f"backed up {manifest['dialect']} database at revision {manifest['revision']} to {args.file} "
          f"(site key {key})")


def cmd_restore(settings: Settings, args) -> None:
    manifest = backup.restore(settings, Path(args.file), force=args.force)
    print(f"restored the backup of {manifest['created']} (revision {manifest['revision']}) into "
          f"{url_without_password(settings.database)}")
    if manifest["revision"] != migrate.head_revision():
        print("its schema is older than this lablease's: run lablease-server init to migrate it")
    if manifest["site_key"] == "setting":
        print("its secrets are sealed under the secret_key setting of the site it came from: set the same one")


def cmd_downgrade(settings: Settings, args) -> None:
    db = Database(settings.database)
    try:
        migrate.check_known(db)
        current = migrate.current_revision(db)
        undone = migrate.revisions_between(args.revision, current)
        if not undone:
            raise backup.Refused(f"the database is at revision {current}, not later than {args.revision}: "
                                 "nothing to downgrade (lablease-server init upgrades)")
        if not args.yes:
            raise backup.Refused(
                f"downgrading from {current} to {args.revision} undoes {', '.join(undone)} and drops what they "
                "store; back up first (lablease-server backup FILE), stop the server and worker, then repeat "
                "with --yes")
        migrate.downgrade(db, args.revision)
    finally:
        db.dispose()
    print(f"database downgraded from revision {current} to {args.revision}: "
          f"{url_without_password(settings.database)}")


def revision(text: str) -> str:
    try:
        return migrate.known_revision(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_commands(sub) -> None:
    save = sub.add_parser("backup", help="write the database and the site key to an archive, while serving")
    save.add_argument("file", help="the archive to write (a .tar.gz, mode 0600)")
    save.set_defaults(func=cmd_backup)
    load = sub.add_parser("restore", help="restore a backup into an empty data directory or database")
    load.add_argument("file")
    load.add_argument("--force", action="store_true", help="replace a database that is not empty (servers stopped)")
    load.set_defaults(func=cmd_restore)
    db = sub.add_parser("db", help="the database's schema").add_subparsers(dest="action", required=True)
    down = db.add_parser("downgrade", help="take the schema back to an earlier revision (drops data)")
    down.add_argument("revision", type=revision, help="a revision id, e.g. 0009, or base")
    down.add_argument("--yes", action="store_true", help="really drop what the later revisions store")
    down.set_defaults(func=cmd_downgrade)
