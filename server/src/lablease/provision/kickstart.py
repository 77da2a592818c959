"""Kickstarts: Beaker-style ks_meta and kernel options, and templates rendered in a sandbox.

Templates are admin-edited files, so they run in jinja2's immutable sandbox:
a template can read its context but not reach Python internals or change the
objects it is given. Every failure, whatever jinja2 raised, comes out as one
KickstartError naming the template and line, so a bad site template fails the
installation with a message instead of a traceback.

Lookup order is the site directory (a server setting: it holds `kickstarts/`
and `snippets/` like the built-in templates directory), then the built-ins.
"""
from __future__ import annotations

import re
import shlex
from contextvars import ContextVar
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from ..domain.boot_text import first_unfit

BUILTIN_TEMPLATES = Path(__file__).resolve().parent / "templates"
CONTEXT_NAMES = ("system", "distro", "recipe", "provision", "installation", "ks_meta", "kernel_options",
                 "server_url", "kickstart_url", "callbacks")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_MAX_SNIPPET_DEPTH = 10
# Recipe parts written into the kickstart as whole blocks of lines (a job's <ks_appends>, <kickstart>):
# the one-line rule does not apply to them.
MULTI_LINE = ("ks_appends", "kickstart")
JOB_TEMPLATE = "<kickstart> of the job"
_snippet_depth: ContextVar[int] = ContextVar("lablease_snippet_depth", default=0)


class KickstartError(Exception):
    """A kickstart template could not be rendered; the message says which, where and why."""


# --- templates ---------------------------------------------------------------

class _Sandbox(ImmutableSandboxedEnvironment):
    """Refuse unsafe attributes at once instead of returning an Undefined.

    The stock sandbox returns an Undefined that only fails when used, and
    Undefined prints as "": `{{ ''.__class__ }}` would render silently. An
    escape attempt should fail the render loudly.
    """

    def unsafe_undefined(self, obj, attribute):
        raise SecurityError(f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")


def _describe(error: Exception) -> str:
    if isinstance(error, jinja2.TemplateNotFound) and not isinstance(error, jinja2.TemplatesNotFound):
        return f"no template {error.name}"
    return str(error) or type(error).__name__


def _is_plain_name(name) -> bool:
    return isinstance(name, str) and bool(_PLAIN_NAME.fullmatch(name)) and ".." not in name


def _is_path_part(value) -> bool:
    """A context value (fqdn, lab, family) usable as one path component of a lookup."""
    return (isinstance(value, str) and value != "" and not value.startswith(".")
            and "/" not in value and "\\" not in value)


class KickstartRenderer:
    """Renders kickstarts from the site's templates and snippets, falling back to the built-ins.

    Jinja2 caches compiled templates and reloads a file when its mtime changes,
    so one renderer can live as long as the server and still see admin edits.
    """

    def __init__(self, site_dir: Path | None):
        self._roots = [Path(site_dir)] if site_dir is not None else []
        self._roots.append(BUILTIN_TEMPLATES)
        loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(root) for root in self._roots])
        self._env = _Sandbox(loader=loader, autoescape=False, keep_trailing_newline=True,
                             trim_blocks=True, undefined=jinja2.Undefined)
        self._env.globals["snippet"] = self._snippet_function()
        self._env.filters["shell_quote"] = shlex.quote

    def render(self, context: dict) -> str:
        """The kickstart for one installation: the recipe's own <kickstart> when it has one, or the one given
        when provisioning a reserved system (`provision`; see render_job_template), else `kickstarts/<family>`,
        else `kickstarts/default`."""
        self._check_lines(context)
        own = (context.get("recipe") or context.get("provision") or {}).get("kickstart")
        if own is not None:
            return self.render_job_template(own, context)
        family = (context.get("distro") or {}).get("family")
        names = ([f"kickstarts/{family}"] if _is_path_part(family) else []) + ["kickstarts/default"]
        return self._render(names, self._variables(context))

    def render_job_template(self, source: str, context: dict) -> str:
        """A job's own template, in the same sandbox and with the same variables and snippets as the
        site's, followed by the recipe's <ks_appends> and lablease's callback sections (snippet
        lablease_tail) unless the template writes them itself."""
        self._check_lines(context)
        if "lablease_tail" not in source:
            source = source.rstrip("\n") + "\n{{ snippet('lablease_tail') }}\n"
        try:
            template = self._env.from_string(source)
        except jinja2.TemplateSyntaxError as error:
            raise KickstartError(f"kickstart template {JOB_TEMPLATE} line {error.lineno}: {error.message}") from None
        try:
            return template.render(self._variables(context))
        except KickstartError:
            raise
        except Exception as error:  # as for a site template: the job's own failure, said plainly
            _, line = self._template_frame(error, JOB_TEMPLATE)
            line_text = f" line {line}" if line else ""
            raise KickstartError(f"kickstart template {JOB_TEMPLATE}{line_text}: {_describe(error)}") from None

    @staticmethod
    def _check_lines(context: dict) -> None:
        # The kickstart is read line by line: text that would break a line fails this installation
        # (the API refuses such text; this catches what reached the database another way).
        for key in ("recipe", "provision"):
            if context.get(key):
                context = {**context, key: {k: v for k, v in context[key].items() if k not in MULTI_LINE}}
        unfit = first_unfit(context, "")
        if unfit is not None:
            raise KickstartError(f"cannot write the kickstart: {unfit[0]} {unfit[1]}")

    def _variables(self, context: dict) -> dict:
        """The context, plus every ks_meta key that shadows neither it nor a template global."""
        variables = {key: value for key, value in (context.get("ks_meta") or {}).items()
                     if key not in context and key not in CONTEXT_NAMES and key not in self._env.globals}
        variables.update(context)
        return variables

    def _render(self, names: list[str], variables: dict) -> str:
        name = names[0]
        try:
            template = self._env.select_template(names)
            name = template.name
            return template.render(variables)
        except KickstartError:
            raise  # from a snippet, already naming it
        except jinja2.TemplateSyntaxError as error:
            where = error.name or name
            raise KickstartError(f"kickstart template {where} line {error.lineno}: {error.message}") from None
        except Exception as error:  # whatever a site template manages to raise is its own failure
            where, line = self._template_frame(error, name)
            line_text = f" line {line}" if line else ""
            raise KickstartError(f"kickstart template {where}{line_text}: {_describe(error)}") from None

    def _template_frame(self, error: Exception, name: str) -> tuple[str, int | None]:
        """The innermost template line in the traceback (jinja2 rewrites its frames to point there)."""
        where, line = name, None
        tb = error.__traceback__
        while tb is not None:
            if "__jinja_exception__" in tb.tb_frame.f_globals:
                where, line = self._template_name(tb.tb_frame.f_code.co_filename, name), tb.tb_lineno
            tb = tb.tb_next
        return where, line

    def _template_name(self, filename: str, fallback: str) -> str:
        for root in self._roots:
            try:
                return Path(filename).resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                continue
        return fallback

    def _snippet_function(self):
        @jinja2.pass_context
        def snippet(ctx, name):
            """First of per_system/<name>/<fqdn>, per_lab/<name>/<lab>, per_osmajor/<name>/<family>, <name>."""
            if not _is_plain_name(name):
                raise SecurityError(f"snippet name {name!r} is not a plain name")
            names = self._snippet_names(name, ctx.get("system") or {}, ctx.get("distro") or {})
            found = [candidate for candidate in names if self._exists(candidate)]
            if not found:
                return f"# no snippet {name}"
            depth = _snippet_depth.get()
            if depth >= _MAX_SNIPPET_DEPTH:
                raise RecursionError(f"snippets nested more than {_MAX_SNIPPET_DEPTH} deep at {name!r}")
            token = _snippet_depth.set(depth + 1)
            try:
                text = self._render(found, ctx.get_all())
            finally:
                _snippet_depth.reset(token)
            # The snippet file's final newline is dropped: `{{ snippet('x') }}` on its own line adds no blank line.
            return text[:-1] if text.endswith("\n") else text
        return snippet

    @staticmethod
    def _snippet_names(name: str, system: dict, distro: dict) -> list[str]:
        levels = (("per_system", system.get("fqdn")), ("per_lab", system.get("lab")),
                  ("per_osmajor", distro.get("family")))
        names = [f"snippets/{level}/{name}/{value}" for level, value in levels if _is_path_part(value)]
        return names + [f"snippets/{name}"]

    def _exists(self, name: str) -> bool:
        return any((root / name).is_file() for root in self._roots)
