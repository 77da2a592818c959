"""parse_job_xml: untrusted job XML -> the job's complete JSON form."""
from __future__ import annotations

from ..domain.errors import Invalid
from . import grammar
from .errors import PathError, format_path
from .fromxml import Lines, job_from_xml
from .normalise import normalise
from .safexml import parse_untrusted


def parse_job_xml(data: bytes) -> dict:
    """The normalised job, or Invalid("job", "line N: what is wrong").

    Steps: hardened parse with limits -> the grammar, explained element by
    element -> conversion and normalisation (values, combinations) -> the
    RELAX NG validator as the final word.
    """
    root = parse_untrusted(data)
    grammar.explain(root)
    lines = Lines()
    try:
        job = normalise(job_from_xml(root, lines))
    except PathError as error:
        raise Invalid("job", _located(error, lines)) from None
    grammar.validate(root)
    return job


def _located(error: PathError, lines: Lines) -> str:
    element, rest = lines.locate(error.path)
    if element is None:
        return f"{error.field}: {error.reason}"
    where = f"line {element.sourceline}: <{element.tag}>"
    detail = f" {format_path(rest)}" if rest else ""
    return f"{where}{detail}: {error.reason}"
