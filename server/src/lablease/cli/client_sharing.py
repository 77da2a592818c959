"""Handlers of `lablease loan ...`, `pools`, `pool ...` and `policy ...`: sharing systems with people."""
from __future__ import annotations

from .client_commands import Outcome, body, forced, in_cli_terms, system_path
from .client_http import Api, ClientError, segment
from .client_status import ExitStatus
from .client_views import LAB, LOAN, POLICY, POOL, RULE


def loan_grant(api: Api, args) -> Outcome:
    loan = api.post(system_path(args.system, "/loan"), body(
        recipient=args.recipient, duration=args.duration, limited=args.limited, comment=args.comment,
        force=args.force, purpose=args.purpose))
    return Outcome(loan, LOAN)


def loan_extend(api: Api, args) -> Outcome:
    change = {"extend_by": args.by} if args.by is not None else {"end": args.end}
    return Outcome(api.patch(system_path(args.system, "/loan"), change), LOAN)


def loan_return(api: Api, args) -> Outcome:
    api.delete(system_path(args.system, "/loan"))
    return Outcome(None, LOAN, f"returned the loan of {args.system}")


def loan_show(api: Api, args) -> Outcome:
    return Outcome(api.get(system_path(args.system, "/loan")), LOAN)


def pool_path(name: str, rest: str = "") -> str:
    return f"/pools/{segment(name)}{rest}"


def labs(api: Api, args) -> Outcome:
    """The labs agents serve: each agent's state and its lab's waiting and running commands."""
    return Outcome(api.get_all("/labs"), LAB)


def pools(api: Api, args) -> Outcome:
    return Outcome(api.get_all("/pools"), POOL)


def pool_show(api: Api, args) -> Outcome:
    return Outcome(api.get(pool_path(args.name)), POOL)


def pool_create(api: Api, args) -> Outcome:
    pool = api.post("/pools", body(name=args.name, description=args.description, owner_group=args.group,
                                   automation_floor=args.automation_floor))
    return Outcome(pool, POOL)


def pool_set(api: Api, args) -> Outcome:
    change = body(description=args.description, automation_floor=args.automation_floor)
    if not change:
        raise ClientError("nothing to change: give --description or --automation-floor", ExitStatus.USAGE)
    return Outcome(api.patch(pool_path(args.name), change), POOL)


def pool_add(api: Api, args) -> Outcome:
    """One call per system, in order; the first refusal stops (the earlier ones stay added)."""
    pool = None
    for fqdn in args.fqdns:
        pool = api.post(pool_path(args.name, "/systems"), {"fqdn": fqdn})
    return Outcome(pool, POOL)


def pool_remove(api: Api, args) -> Outcome:
    """One call per system, in order; the first refusal stops (the earlier ones stay removed)."""
    try:
        for fqdn in args.fqdns:
            api.delete(pool_path(args.name, f"/systems/{segment(fqdn)}"), forced(args))
    except ClientError as error:
        raise in_cli_terms(error, args, "--force removes it anyway") from None
    return Outcome(api.get(pool_path(args.name)), POOL)


def policy_show(api: Api, args) -> Outcome:
    return Outcome(api.get(system_path(args.system, "/access-policy")), POLICY)


def policy_grant(api: Api, args) -> Outcome:
    rule = api.post(system_path(args.system, "/access-policy/rules"), body(
        permission=args.permission, user=args.user, group=args.group, everybody=args.everybody))
    return Outcome(rule, RULE)


def policy_revoke(api: Api, args) -> Outcome:
    try:
        api.delete(system_path(args.system, f"/access-policy/rules/{args.rule_id}"), forced(args))
    except ClientError as error:
        raise in_cli_terms(error, args, "--force revokes it anyway") from None
    return Outcome(None, RULE, f"revoked rule {args.rule_id} of {args.system}")
