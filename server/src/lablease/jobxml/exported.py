"""What a job exported from Beaker says about its run, dropped with a warning so the job resubmits.

`bkr job-results` and Beaker's job page export a job with its ids, owner,
status and results (`<job id= owner= result= status=>`, `<task result=>`,
`<results>`, `<logs>`...). None of it is a request, so it is taken out of the
document before the grammar sees it, and each piece becomes one warning.
"""
from __future__ import annotations

from . import fields

# Said of one attribute in particular; the others describe a run elsewhere.
_MESSAGES = {("job", "user"): "the job belongs to whoever submits it (lablease has no submitting on behalf of "
                              "another user): ignored"}


def xml_path(element) -> str:
    """/job/recipeSet[1]/recipe[2]/task[1]: each step numbered among its same-named siblings."""
    steps = []
    while element is not None:
        parent = element.getparent()
        if parent is None:
            steps.append(element.tag)
        else:
            same = [sibling for sibling in parent if sibling.tag == element.tag]
            steps.append(f"{element.tag}[{same.index(element) + 1}]")
        element = parent
    return "/" + "/".join(reversed(steps))


def strip_exported(root) -> list[dict]:
    """Remove exported run data from `root` in place; one warning per attribute or element removed."""
    warnings = []
    for element in list(root.iter(*fields.EXPORTED_ATTRIBUTES)):
        for name in fields.EXPORTED_ATTRIBUTES[element.tag]:
            if name in element.attrib:
                message = _MESSAGES.get((element.tag, name), "describes a run in another system (an exported "
                                                             "job): ignored")
                warnings.append({"path": f"{xml_path(element)}/@{name}",
                                 "message": f"{name}={element.get(name)!r} {message}"})
                del element.attrib[name]
    children = {name for names in fields.EXPORTED_CHILDREN.values() for name in names}
    for element in list(root.iter(*children)):
        parent = element.getparent()
        if parent is None or element.tag not in fields.EXPORTED_CHILDREN.get(parent.tag, ()):
            continue
        warnings.append({"path": xml_path(element),
                         "message": f"<{element.tag}> holds the results of an exported job's run: ignored"})
        parent.remove(element)
    return warnings
