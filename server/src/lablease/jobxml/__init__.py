"""Jobs as submitted: job XML (Beaker-compatible subset) and its JSON form.

Pure: no database, no HTTP. `parse_job_xml` reads untrusted XML safely,
`normalise_job` checks and completes the JSON form, both returning the same
dict for the same job; `referenced_names` lists what the services must look
up; `render_job_xml` writes a job back as XML. Format reference: docs/jobs.md.
"""
from .normalise import MAX_FILTER_DEPTH, filter_arches, normalise_host_filter, normalise_job, referenced_names
from .parse import parse_job_xml, parse_job_xml_with_warnings
from .render import render_job_xml
from .safexml import MAX_BYTES, MAX_DEPTH, MAX_ELEMENTS
from .schema import JOB_SCHEMA
from .warnings import job_warnings

__all__ = [
    "JOB_SCHEMA", "MAX_BYTES", "filter_arches", "MAX_DEPTH", "MAX_ELEMENTS", "MAX_FILTER_DEPTH",
    "job_warnings", "normalise_host_filter", "normalise_job", "parse_job_xml", "parse_job_xml_with_warnings",
    "referenced_names", "render_job_xml",
]
