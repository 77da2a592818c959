"""Signing in and out."""
from ...domain.errors import DirectoryUnavailable, Unauthenticated
from ...domain.signin import safe_next
from ...services.auth import signin
from ..context import PageContext, Redirect


def home(ctx: PageContext) -> Redirect:
    return Redirect("/systems")


def login_form(ctx: PageContext):
    if ctx.actor is not None:
        return Redirect(safe_next(ctx.query.get("next")))
    return ctx.render("login.html", next=safe_next(ctx.query.get("next")), username="")


def login(ctx: PageContext):
    target = safe_next(ctx.form.get("next"))
    name, password = ctx.form.get("username", "").strip(), ctx.form.get("password", "")
    wait = ctx.signins.retry_after(name, ctx.client, ctx.now)
    if wait:  # too many failures for this name or from this address: not even checked (web/throttle.py)
        return ctx.render("login.html", status=429, headers={"Retry-After": str(wait)}, next=target,
                          username=name, error=f"Too many failed sign-ins: try again in {-(-wait // 60)} minute(s).")
    try:
        secret = signin.sign_in(ctx.uow, ctx.now, name, password, ctx.settings.web_session_lifetime)
    except (Unauthenticated, DirectoryUnavailable) as error:  # the directory's outage: 503 saying which
        ctx.signins.failed(name, ctx.client, ctx.now)
        status = 503 if isinstance(error, DirectoryUnavailable) else 401
        return ctx.render("login.html", status=status, next=target, username=name, error=error.detail)
    ctx.signins.succeeded(name)
    return Redirect(target, session=secret)


def logout(ctx: PageContext) -> Redirect:
    signin.sign_out(ctx.uow, ctx.now, ctx.session_secret)
    return Redirect("/login", "You are signed out.", end_session=True)
