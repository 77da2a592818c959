"""/systems/{fqdn}/loan, /groups, /pools, access policies, /me settings."""
from ...services.people import groups
from ...services.lifecycle import loans
from ...services.catalog import policies, pools
from ...domain.loans import LoanRequest
from ...domain.paging import Page
from ..inputs import duration_field, time_field
from .context import Context, Reply


def loan_grant(ctx: Context) -> dict:
    body = ctx.body
    asked = LoanRequest(ctx.args["fqdn"], body["recipient"], duration_field(body, "duration"),
                        body.get("limited", False), body.get("comment"), ctx.force, body.get("purpose"))
    return loans.grant(ctx.uow, ctx.actor, ctx.now, asked)


def loan_show(ctx: Context) -> dict:
    return loans.show(ctx.uow, ctx.actor, ctx.args["fqdn"])


def loan_extend(ctx: Context) -> dict:
    return loans.extend(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], time_field(ctx.body, "end"),
                        duration_field(ctx.body, "extend_by"))


def loan_return(ctx: Context) -> None:
    loans.give_back(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"])


def loan_history(ctx: Context) -> Page:
    return loans.history(ctx.uow, ctx.actor, ctx.args["fqdn"], ctx.page)


def group_create(ctx: Context) -> dict:
    b = ctx.body
    return groups.create(ctx.uow, ctx.actor, ctx.now, b["name"], b.get("description"), b.get("members", []),
                         b.get("owners", []))


def group_list(ctx: Context) -> Page:
    return groups.listing(ctx.uow, ctx.actor, ctx.page)


def group_show(ctx: Context) -> dict:
    return groups.show(ctx.uow, ctx.actor, ctx.args["name"])


def group_update(ctx: Context) -> dict:
    return groups.update(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.body)


def group_delete(ctx: Context) -> Reply | None:
    return _deleted(ctx.args["name"], groups.delete(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.force))


def _deleted(name: str, changed: list[str]) -> Reply | None:
    """204; or, when forcing changed what still named it, 200 saying what it changed."""
    return Reply({"deleted": name, "changed": changed}, 200) if changed else None


def member_add(ctx: Context) -> dict:
    return groups.add_member(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.body["user"],
                             ctx.body.get("owner", False))


def member_remove(ctx: Context) -> None:
    groups.remove_member(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.args["user"])


def me_update(ctx: Context) -> dict:
    return groups.update_me(ctx.uow, ctx.actor, ctx.now, ctx.body)


def pool_create(ctx: Context) -> Reply:
    b = ctx.body
    return Reply(pools.create(ctx.uow, ctx.actor, ctx.now, b["name"], b.get("description"), b.get("owner_group"),
                              b.get("automation_floor", 0)), 201)


def pool_list(ctx: Context) -> Page:
    return pools.listing(ctx.uow, ctx.page)


def pool_show(ctx: Context) -> dict:
    return pools.show(ctx.uow, ctx.args["name"])


def pool_update(ctx: Context) -> dict:
    return pools.update(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.body)


def pool_delete(ctx: Context) -> Reply | None:
    return _deleted(ctx.args["name"], pools.delete(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.force))


def pool_add_system(ctx: Context) -> dict:
    return pools.add_system(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.body["fqdn"], force=ctx.force)


def pool_remove_system(ctx: Context) -> None:
    pools.remove_system(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.args["fqdn"], force=ctx.force)


def policy_show(ctx: Context) -> dict:
    return policies.system_policy(ctx.uow, ctx.actor, ctx.args["fqdn"])


def policy_put(ctx: Context) -> dict:
    return policies.put_system_policy(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], ctx.body, force=ctx.force)


def rule_add(ctx: Context) -> Reply:
    return Reply(policies.add_system_rule(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], ctx.body, force=ctx.force), 201)


def rule_remove(ctx: Context) -> None:
    policies.remove_system_rule(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], ctx.args["id"], force=ctx.force)


def pool_policy_show(ctx: Context) -> dict:
    return policies.pool_policy(ctx.uow, ctx.args["name"])


def pool_rule_add(ctx: Context) -> Reply:
    return Reply(policies.add_pool_rule(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.body, force=ctx.force), 201)


def pool_rule_remove(ctx: Context) -> None:
    policies.remove_pool_rule(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], ctx.args["id"], force=ctx.force)
