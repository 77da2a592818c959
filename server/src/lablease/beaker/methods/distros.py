"""distros.filter and distrotrees.filter: bkr distros-list and distro-trees-list (no login needed, as in Beaker).

lablease keeps distro trees only: a Beaker "distro" is the trees sharing a name, its id the lowest id among
them, its version (osversion) their family. Lab controllers are lablease's labs. The name, tree path and lab
filters are SQL LIKE patterns (% matches anything), as in Beaker.
"""
from __future__ import annotations

from ...domain.errors import Invalid
from ...jobxml.parse import parse_job_xml
from ...scheduler.filters import compare
from ...services.catalog import distros
from ..call import Call
from ..registry import xmlrpc


def distro_requires(text: str | None) -> dict | None:
    """bkr --xml-filter: distroRequires elements (or a whole <distroRequires>), read by the job XML parser."""
    if not text or not text.strip():
        return None
    inner = text.strip()
    if not inner.startswith("<distroRequires"):
        inner = f"<distroRequires><and>{inner}</and></distroRequires>"
    try:
        job = parse_job_xml(f'<job><recipeSet><recipe>{inner}<hostRequires/><task name="/filter"/></recipe>'
                            "</recipeSet></job>".encode("utf-8"))
    except Invalid as error:
        raise Invalid("xml", f"not a distroRequires filter: {error.detail}") from None
    return job["recipe_sets"][0]["recipes"][0].get("distro_requires")


def wanted_tree(filters: dict) -> dict | None:
    """The filters bkr sends, as one distroRequires tree for the use case that matches jobs' distros."""
    leaves = [{"field": "distro_name", "op": "like", "value": filters["name"]}] if filters.get("name") else []
    for key, field in (("family", "distro_family"), ("arch", "distro_arch")):
        if filters.get(key):
            leaves.append({"field": field, "op": "=", "value": filters[key]})
    leaves += [{"field": "distro_tag", "op": "=", "value": tag} for tag in filters.get("tags") or []]
    extra = distro_requires(filters.get("xml"))
    leaves += [extra] if extra else []
    return {"and": leaves} if leaves else None


def check_filters(filters) -> dict:
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise Invalid("filter", "send the filter as a struct")
    return filters


def limited(items: list, filters: dict) -> list:
    limit = filters.get("limit")
    return items[:int(limit)] if limit else items


def distro_ids(trees: list[dict]) -> dict[str, int]:
    ids: dict[str, int] = {}
    for tree in trees:
        ids[tree["name"]] = min(tree["id"], ids.get(tree["name"], tree["id"]))
    return ids


@xmlrpc("distrotrees.filter", auth=False)
def trees_filter(call: Call, filters=None):
    filters = check_filters(filters)
    trees = distros.matching_trees(call.uow, wanted_tree(filters))
    ids = distro_ids(distros.matching_trees(call.uow, None))
    if filters.get("distro_tree_id"):
        trees = [t for t in trees if str(t["id"]) == str(filters["distro_tree_id"])]
    if filters.get("distro_id"):
        trees = [t for t in trees if str(ids[t["name"]]) == str(filters["distro_id"])]
    if filters.get("treepath"):
        trees = [t for t in trees if compare("like", t["url"], filters["treepath"])]
    if filters.get("labcontroller"):
        trees = [t for t in trees if not t["labs"] or any(compare("like", lab, filters["labcontroller"])
                                                          for lab in t["labs"])]
    return [{"distro_tree_id": t["id"], "distro_id": ids[t["name"]], "distro_name": t["name"],
             "distro_osversion": t["family"] or "", "distro_osmajor": t["family"] or "", "distro_tags": t["tags"],
             "arch": t["arch"], "variant": t["variant"] or "", "images": [],
             "kernel_options": t["kernel_options"] or "", "kernel_options_post": "", "ks_meta": t["ks_meta"] or "",
             "available": [[lab, t["url"]] for lab in (t["labs"] or ["(every lab)"])]}
            for t in limited(trees, filters)]


@xmlrpc("distros.filter", auth=False)
def distros_filter(call: Call, filters=None):
    filters = check_filters(filters)
    ids = distro_ids(distros.matching_trees(call.uow, None))
    seen: dict[str, dict] = {}
    for tree in distros.matching_trees(call.uow, wanted_tree(filters)):  # newest first
        distro = seen.setdefault(tree["name"], {"distro_id": ids[tree["name"]], "distro_name": tree["name"],
                                                "distro_version": tree["family"] or "", "distro_tags": []})
        distro["distro_tags"] = sorted(set(distro["distro_tags"]) | set(tree["tags"]))
    found = list(seen.values())
    if filters.get("distroid"):
        found = [d for d in found if str(d["distro_id"]) == str(filters["distroid"])]
    return limited(found, filters)
