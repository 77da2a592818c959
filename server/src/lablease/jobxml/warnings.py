"""The parts of a job lablease keeps but does not act on, each as a warning in the submit answer.

A job is never changed by what it says here: these parts are stored with it
and written back by the export, so nothing a submitter wrote is silently
dropped. Paths are written the XML way (/job/recipeSet[1]/recipe[2]/watchdog),
whichever form the job came in.
"""
from __future__ import annotations

from ..domain.filter_trees import leaves
from . import extensions, fields

_JOB = {
    "retention_tag": "kept with the job; lablease has no retention policies, results are kept as the site keeps them",
    "product": "kept with the job; lablease has no products",
}
_RECIPE = "/job/recipeSet[{}]/recipe[{}]"


def job_warnings(job: dict) -> list[dict]:
    """Warnings for a normalised job, in document order."""
    found = [{"path": f"/job/@{name}", "message": message}
             for name, message in _JOB.items() if job.get(name) is not None]
    found += [{"path": f"/job/{extensions.qualified_name(text)}",
               "message": "an extension element (another XML namespace): kept with the job and written back by its "
                          "export; lablease does not act on it"} for text in job.get("extensions", ())]
    for i, recipe_set in enumerate(job["recipe_sets"], 1):
        for j, recipe in enumerate(recipe_set["recipes"], 1):
            found += _recipe_warnings(recipe, _RECIPE.format(i, j))
            for k, guest in enumerate(recipe.get("guests") or [], 1):
                guest_path = f"{_RECIPE.format(i, j)}/guestrecipe[{k}]"
                found += _recipe_warnings(guest, guest_path) + _guest_warnings(guest, guest_path)
    return found


_GUEST_PLACED = {
    "host_requires": ("hostRequires", "checked; a guest runs on its host recipe's system"),
    "autopick": ("autopick", "checked; a guest runs on its host recipe's system"),
    "force": ("hostRequires/@force", "checked; a guest runs on its host recipe's system"),
    "reservesys": ("reservesys", "kept; a guest system ends with its guest (its host's <reservesys> keeps the host)"),
}


def _guest_warnings(guest: dict, path: str) -> list[dict]:
    """What a guest recipe says about where it runs: its host decides that."""
    return [{"path": f"{path}/{element}", "message": message}
            for key, (element, message) in _GUEST_PLACED.items() if _said(guest.get(key))]


def _said(value) -> bool:
    """Whether the submitter wrote the part (the normalised form has defaults: no autopick is no pools)."""
    if isinstance(value, dict) and set(value) == {"random", "pools"}:
        return value["random"] or bool(value["pools"])
    return value is not None


def _recipe_warnings(recipe: dict, path: str) -> list[dict]:
    found = []
    if recipe.get("role") is not None:
        found.append({"path": f"{path}/@role", "message": "kept with the recipe; lablease does not give the "
                                                          "harness role variables for recipes (task roles are kept)"})
    if (recipe.get("watchdog") or {}).get("panic") is not None:
        found.append({"path": f"{path}/watchdog/@panic",
                      "message": "kept; lablease does not watch consoles for panics (its watchdog is the recipe's "
                                 "runtime limit)"})
    if recipe.get("distro") is not None:
        found.append({"path": f"{path}/distro",
                      "message": "kept; lablease installs only distro trees it knows, so this recipe runs on its "
                                 "system as it is (use <distroRequires> to install)"})
    unacted = sorted({leaf["field"] for leaf in leaves(recipe.get("distro_requires"))} &
                     set(fields.UNACTED_DISTRO_FIELDS))
    for field in unacted:
        found.append({"path": f"{path}/distroRequires",
                      "message": f"<{fields.ELEMENT_FOR_FIELD[field][1]}> kept; every distro tree matches it "
                                 "(lablease installs every tree over its URL and has no virt trees)"})
    return found
