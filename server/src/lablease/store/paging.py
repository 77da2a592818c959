"""Keyset pages of any list query: one builder for every list the API answers.

A list's order is a tuple of columns, each ascending or descending, whose last member is
unique (an id or a unique name), so each row has one place. A page is the next `limit` rows
after the cursor's position, found with `(a, b) > (x, y)` written out per column (so mixed
directions work on both databases) and LIMIT — never OFFSET, so rows inserted on either side
of the position neither repeat nor skip an entry, and a deep page costs what the first does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from sqlalchemy import and_, false, or_

from ..domain.paging import Page, PageRequest, decode_cursor, encode_cursor
from .secrets import site_key


@dataclass(frozen=True)
class Order:
    """One sort column of a list."""

    column: object  # a mapped attribute or column expression
    descending: bool = False

    @property
    def clause(self):
        return self.column.desc() if self.descending else self.column.asc()

    def beyond(self, value):
        return self.column < value if self.descending else self.column > value


def after_condition(order: Sequence[Order], values: tuple):
    """Rows strictly after `values` in `order`: a > x, or a = x and b > y, or ... ."""
    alternatives = []
    for index, part in enumerate(order):
        equal = [order[i].column == values[i] for i in range(index)]
        alternatives.append(and_(*equal, part.beyond(values[index])))
    return or_(*alternatives) if alternatives else false()


def fetch(uow, scope: str, query, order: Sequence[Order], page: PageRequest,
          keep: Callable[[object], bool] | None = None) -> Page:
    """The page of `query` (a select of one entity) that `page` asks for, in `order`.

    `keep` drops rows the caller may not see after they are read (a permission decided in
    domain/): the page is then filled from further rows, so a page is short only at the end.
    `scope` names the list, so its cursors work only for it.
    """
    values = decode_cursor(site_key(uow.settings), scope, page.after, len(order)) if page.after else None
    statement = query.add_columns(*(part.column for part in order)).order_by(*(part.clause for part in order))
    kept: list[tuple[object, tuple]] = []
    while len(kept) <= page.limit:
        chunk = statement if values is None else statement.where(after_condition(order, values))
        want = page.limit + 1 - len(kept)
        rows = [(row[0], tuple(row[1:])) for row in uow.session.execute(chunk.limit(want)).unique()]
        kept += [(entity, sort_key) for entity, sort_key in rows if keep is None or keep(entity)]
        if len(rows) < want:
            break  # the end of the list
        values = rows[-1][1]
    if len(kept) <= page.limit:
        return Page([entity for entity, _ in kept])
    return Page([entity for entity, _ in kept[:page.limit]], encode_cursor(site_key(uow.settings), scope,
                                                                          kept[page.limit - 1][1]))
