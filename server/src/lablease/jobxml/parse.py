"""parse_job_xml: untrusted job XML -> the job's complete JSON form."""
from __future__ import annotations

from ..domain.errors import Invalid
from . import grammar
from .errors import PathError, format_path
from .exported import strip_exported
from .extensions import take_extensions
from .fromxml import Lines, job_from_xml
from .normalise import normalise
from .safexml import parse_untrusted
from .warnings import job_warnings


def parse_job_xml(data: bytes) -> dict:
    """The normalised job (see parse_job_xml_with_warnings)."""
    return parse_job_xml_with_warnings(data)[0]


def parse_job_xml_with_warnings(data: bytes) -> tuple[dict, list[dict]]:
    """The normalised job and its warnings (parts kept, not acted on), or Invalid("job", "line N: ...").

    Steps: hardened parse with limits -> an exported job's run data taken
    out (each a warning) -> extension elements of other namespaces set
    aside (kept with the job, each a warning) -> the grammar, explained element by element ->
    conversion and normalisation (values, combinations) -> the RELAX NG
    validator as the final word.
    """
    root = parse_untrusted(data)
    exported = strip_exported(root)
    extensions = take_extensions(root)
    grammar.explain(root)
    lines = Lines()
    try:
        submitted = job_from_xml(root, lines)
        if extensions:
            submitted["extensions"] = extensions
        job = normalise(submitted)
    except PathError as error:
        raise Invalid("job", _located(error, lines)) from None
    grammar.validate(root)
    return job, exported + job_warnings(job)


def _located(error: PathError, lines: Lines) -> str:
    element, rest = lines.locate(error.path)
    if element is None:
        return f"{error.field}: {error.reason}"
    where = f"line {element.sourceline}: <{element.tag}>"
    detail = f" {format_path(rest)}" if rest else ""
    return f"{where}{detail}: {error.reason}"
