"""POST /batch: several writes in one unit of work, so a task that needs several changes makes all or none.

Each request runs its route's own view (the same input checks, rules and answers as alone); the
application commits once, after the last. The first refusal ends the batch, and the transaction
is rolled back: the answer is that refusal, its detail naming the request (its number and path).
"""
from __future__ import annotations

from ...domain.errors import DomainError
from .context import Context


def run(ctx: Context) -> dict:
    responses = []
    for number, request in enumerate(ctx.body["requests"], 1):
        method, path = request["method"], request["path"]
        try:
            status, answer = ctx.call(method, path, request.get("query") or {}, request.get("body"))
        except DomainError as error:
            error.detail = f"request {number} of the batch ({method} {path}): {error.detail}"
            error.args = (error.detail,)
            error.extra["request"] = number
            raise
        responses.append({"status": status} | ({} if answer is None else {"body": answer}))
    return {"responses": responses}


BATCH_VIEW = run
