"""The one walk over filter trees that job XML, advance reservations and the scheduler share."""
from lablease.domain.filter_trees import leaves
from lablease.jobxml.normalise import filter_arches, referenced_names
from lablease.jobxml.parse import parse_job_xml_with_warnings
from lablease.scheduler import filters


def leaf(field, value, op="="):
    return {"field": field, "op": op, "value": value}


TREE = {"and": [leaf("arch", "x86_64"),
                {"or": [leaf("pool", "gpus"), {"not": leaf("arch", "s390x", "!=")}]},
                {"disk": {"and": [leaf("disk_size", 10**9, ">="), leaf("disk_model", "ssd*", "like")]}},
                {"not": {"disk": leaf("disk_sector_size", 4096)}}]}


def test_leaves_are_every_leaf_in_the_order_written_through_and_or_not_and_disk():
    assert list(leaves(TREE)) == [leaf("arch", "x86_64"), leaf("pool", "gpus"), leaf("arch", "s390x", "!="),
                                  leaf("disk_size", 10**9, ">="), leaf("disk_model", "ssd*", "like"),
                                  leaf("disk_sector_size", 4096)]


def test_a_single_leaf_is_its_own_leaf_and_no_tree_has_none():
    assert list(leaves(leaf("arch", "aarch64"))) == [leaf("arch", "aarch64")]
    assert list(leaves(None)) == [] and list(leaves({})) == [] and list(leaves({"and": []})) == []


def test_a_tree_deeper_than_the_interpreter_recurses_is_walked():
    deep = leaf("arch", "ppc64le")
    for _ in range(5000):
        deep = {"not": deep}
    assert list(leaves(deep)) == [leaf("arch", "ppc64le")]


def test_the_scheduler_and_job_xml_use_the_same_walk():
    """The walk each of them had once: the scheduler's live leaves, job XML's arches (also under <disk>
    and <not>) and the distro fields its warnings speak of, however deep they are written."""
    assert filters.leaves is leaves
    assert filters.is_live({"disk": {"not": leaf("user", "alice")}})
    assert filter_arches(TREE) == {"x86_64", "s390x"}
    job, said = parse_job_xml_with_warnings(
        b"<job><recipeSet><recipe><distroRequires><or><distro_name op='like' value='Fedora%'/>"
        b"<not><distro_virt value='false'/></not></or></distroRequires>"
        b"<hostRequires><and><pool value='gpus'/><not><pool value='old'/></not></and></hostRequires>"
        b"</recipe></recipeSet></job>")
    assert [w["path"] for w in said if "distro tree matches" in w["message"]] == [
        "/job/recipeSet[1]/recipe[1]/distroRequires"]
    assert referenced_names(job)["pools"] == {"gpus", "old"}
