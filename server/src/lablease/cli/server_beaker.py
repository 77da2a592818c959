"""`lablease-server import beaker-csv FILE...` and `export beaker-csv DIR`: Beaker's CSV exchange.

The files are Beaker's (Admin -> Export), read with Python's csv module; domain/beaker_csv.py maps the rows,
services/catalog/beaker_csv.py applies them through the system import, pool and group use cases in one unit of work.
Every refused row is named by file and line, and nothing is imported unless every row is accepted; what
lablease does not keep is named too (docs/beaker.md, "Importing Beaker's CSV").
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

from ..api.inputs import check_body, check_storable
from ..api.schemas import SYSTEM_IMPORT
from ..domain import beaker_csv as rules
from ..domain.errors import Invalid
from ..services.catalog import beaker_csv
from .import_refused import ImportRefused

_MISSING = object()  # csv.DictReader's value for a column the row lacks, and key for extra fields


def read_rows(path: str, refused: list) -> list[rules.Row]:
    """The rows of one of Beaker's CSV files; a row that cannot be read goes to `refused` as (row, why)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            return _rows(path, csv.DictReader(handle, restkey=_MISSING, restval=_MISSING), refused)
    except UnicodeDecodeError as error:
        raise ImportRefused(f"{path}: not UTF-8 text ({error.reason} at byte {error.start}); nothing imported") from None
    except csv.Error as error:
        raise ImportRefused(f"{path}: not a CSV file: {error}; nothing imported") from None


def _rows(path: str, reader: csv.DictReader, refused: list) -> list[rules.Row]:
    header = reader.fieldnames
    if not header:
        raise ImportRefused(f"{path}: empty; a file Beaker exported starts with its header (csv_type,...)")
    if "csv_type" not in header:
        raise ImportRefused(f"{path}:1: no csv_type column: not a file Beaker's CSV export wrote (its header "
                            "starts csv_type,fqdn,... or csv_type,user,group,...); nothing imported")
    rows, end = [], reader.line_num
    for values in reader:
        row = rules.Row(path, end + 1, str(values.get("csv_type") or ""), values)
        end = reader.line_num
        try:
            rows.append(_checked(row, header))
        except rules.RowRefused as error:
            refused.append((row, str(error)))
    return rows


def _checked(row: rules.Row, header: list) -> rules.Row:
    """The row with its csv_type taken out, when its fields and its kind's columns are all there."""
    values = dict(row.values)
    if _MISSING in values:
        raise rules.RowRefused(f"too many fields (the header has {len(header)})")
    missing = [name for name, value in values.items() if value is _MISSING]
    if missing:
        raise rules.RowRefused(f"missing fields: {', '.join(missing)}")
    kind = values.pop("csv_type").strip()
    if kind not in rules.COLUMNS:
        raise rules.RowRefused(f"csv_type {kind!r} is not one of {', '.join(rules.COLUMNS)}")
    lacking = [name for name in rules.REQUIRED[kind] if name not in values]
    if lacking:
        raise rules.RowRefused(f"a {kind} row needs the column(s) {', '.join(lacking)}")
    return rules.Row(row.file, row.line, kind, values)


def import_files(uow, actor, now, paths: list[str]) -> tuple[dict, list[tuple[rules.Row, str]]]:
    """Import every file in the unit of work, or raise ImportRefused naming each refused row (the caller
    commits only on success); the summary and the notes on what was not imported."""
    refused: list = []
    rows = [row for path in paths for row in read_rows(path, refused)]
    total = len(rows) + len(refused)
    plan = rules.plan(rows, beaker_csv.current(uow, rules.fqdns_named(rows)))
    refused += plan.refused
    entries, reported_by = [], []
    for row, body in plan.systems.values():
        try:  # the API's own checks of a system body (its schema), as `system import` makes them
            check_storable(body)
            entries.append((len(reported_by), check_body(body, SYSTEM_IMPORT)))
            reported_by.append(row)
        except Invalid as error:
            refused.append((row, error.detail))
    summary = beaker_csv.apply(uow, actor, now, plan, entries, reported_by, refused)
    if refused:
        order = {path: k for k, path in enumerate(paths)}
        lines = [f"{row.where}: {why}" for row, why in sorted(refused, key=lambda r: (order.get(r[0].file, 0),
                                                                                       r[0].line))]
        raise ImportRefused("\n".join([f"{', '.join(paths)}: nothing imported: {len(refused)} of {total} row(s) "
                                       "refused", *lines]))
    return summary, plan.notes


def write_files(directory: str, tables: dict[str, list[dict]]) -> list[tuple[Path, int]]:
    """Each kind's rows as Beaker's export writes them (its header, then csv_type and the columns), mode 0600:
    power rows hold passwords."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for kind, rows in tables.items():
        path = folder / f"{kind}.csv"
        columns = ["csv_type", *rules.COLUMNS[kind]]
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, columns)
            writer.writeheader()
            writer.writerows({"csv_type": kind, **row} for row in rows)
        os.chmod(path, 0o600)  # a file that was there keeps its mode through O_TRUNC
        written.append((path, len(rows)))
    return written
