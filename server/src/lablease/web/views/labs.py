"""/labs: the labs lab agents serve, each agent's state and its lab's commands (GET /api/v1/labs as a page)."""
from ...domain.paging import PageRequest
from ...services.provisioning import labs
from ..context import PageContext

LABS_SHOWN = 200  # a site has a handful of labs; more would be a page of their own


def listing(ctx: PageContext):
    found = labs.listing(ctx.uow, ctx.now, ctx.settings.agent_silence_limit, PageRequest(LABS_SHOWN)).items
    return ctx.render("labs.html", labs=found, silence=int(ctx.settings.agent_silence_limit.total_seconds()))
