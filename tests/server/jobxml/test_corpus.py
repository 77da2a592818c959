"""The corpus of job documents (tests/server/jobxml/corpus): each is read, and written back unchanged.

The integration test tests/server/integration/test_job_language.py submits and schedules each one.
"""
from pathlib import Path

import pytest

from lablease.domain.errors import Invalid
from lablease.jobxml import normalise_job, parse_job_xml, parse_job_xml_with_warnings, render_job_xml

CORPUS = Path(__file__).resolve().parent / "corpus"
DOCUMENTS = sorted(CORPUS.glob("*.xml"))


def test_there_is_a_corpus():
    assert len(DOCUMENTS) >= 20


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_each_document_is_read_and_exported_back_unchanged(path):
    job, _ = parse_job_xml_with_warnings(path.read_bytes())
    exported = render_job_xml(job)
    again, warnings = parse_job_xml_with_warnings(exported)
    assert again == job == normalise_job(job)
    # an export carries no run data: only the parts kept but not acted on warn again
    assert not any("exported job" in w["message"] for w in warnings)


def test_an_exported_jobs_run_data_is_dropped_with_one_warning_each():
    job, warnings = parse_job_xml_with_warnings((CORPUS / "exported_job.xml").read_bytes())
    assert [w["path"] for w in warnings if "exported job" in w["message"]] == [
        "/job/@id", "/job/@owner", "/job/@result", "/job/@status",
        "/job/recipeSet[1]/@id", "/job/recipeSet[1]/@result", "/job/recipeSet[1]/@status",
        "/job/recipeSet[1]/recipe[1]/@id", "/job/recipeSet[1]/recipe[1]/@job_id",
        "/job/recipeSet[1]/recipe[1]/@recipe_set_id", "/job/recipeSet[1]/recipe[1]/@result",
        "/job/recipeSet[1]/recipe[1]/@status", "/job/recipeSet[1]/recipe[1]/@distro",
        "/job/recipeSet[1]/recipe[1]/@family", "/job/recipeSet[1]/recipe[1]/@variant",
        "/job/recipeSet[1]/recipe[1]/@arch", "/job/recipeSet[1]/recipe[1]/@system",
        "/job/recipeSet[1]/recipe[1]/task[1]/@id", "/job/recipeSet[1]/recipe[1]/task[1]/@result",
        "/job/recipeSet[1]/recipe[1]/task[1]/@status", "/job/recipeSet[1]/recipe[1]/task[1]/@avg_time",
        "/job/recipeSet[1]/recipe[1]/logs[1]",
        "/job/recipeSet[1]/recipe[1]/task[1]/results[1]", "/job/recipeSet[1]/recipe[1]/task[1]/logs[1]",
    ]
    assert warnings[0]["message"] == "id='4021' describes a run in another system (an exported job): ignored"
    assert {"path": "/job/@retention_tag", "message": "kept with the job; lablease has no retention policies, "
                                                      "results are kept as the site keeps them"} in warnings
    _, warnings = parse_job_xml_with_warnings(b'<job user="jdoe"><recipeSet><recipe/></recipeSet></job>')
    assert warnings == [{"path": "/job/@user", "message": "user='jdoe' the job belongs to whoever submits it "
                                                          "(lablease has no submitting on behalf of another user): "
                                                          "ignored"}]
    assert job["recipe_sets"][0]["recipes"][0]["tasks"] == [
        {"name": "/distribution/check-install", "role": "STANDALONE", "params": {}}]


def test_the_new_and_old_distro_forms_mean_the_same_leaves():
    new = parse_job_xml((CORPUS / "distro_requires_new.xml").read_bytes())["recipe_sets"][0]["recipes"][0]
    assert new["distro_requires"] == {"and": [
        {"or": [{"field": "distro_name", "op": "like", "value": "Fedora-4%"},
                {"field": "distro_family", "op": "=", "value": "Fedora41"}]},
        {"field": "distro_variant", "op": "=", "value": "Server"},
        {"field": "distro_arch", "op": "=", "value": "x86_64"},
        {"field": "distro_tag", "op": "=", "value": "RELEASED"},
        {"not": {"field": "distro_tag", "op": "=", "value": "BROKEN"}},
        {"field": "distro_lab", "op": "=", "value": "lab-a"},
        {"field": "distro_method", "op": "=", "value": "http"},
    ]}


def test_kickstart_parts_are_read_as_written():
    recipe = parse_job_xml((CORPUS / "realistic_multihost_nfs.xml").read_bytes())["recipe_sets"][0]["recipes"][0]
    assert recipe["kernel_options_post"] == "console=ttyS0,115200 nfsd.debug=1"
    assert recipe["repos"] == [{"name": "nfs-tests", "url": "http://repo.lab.test/nfs-tests/"}]
    assert recipe["partitions"] == [{"fs": "xfs", "type": None, "name": "srv/nfs", "size": 50}]
    assert recipe["packages"] == ["nfs-utils", "rpcbind"]
    assert recipe["ks_appends"] == ["%post\nsystemctl enable nfs-server\n%end"]
    lvm = parse_job_xml((CORPUS / "realistic_storage_lvm.xml").read_bytes())["recipe_sets"][0]["recipes"][0]
    assert lvm["packages"] == ["lvm2", "device-mapper-persistent-data"]  # <installPackage>, as <packages>
    fetched = parse_job_xml((CORPUS / "task_fetch.xml").read_bytes())["recipe_sets"][0]["recipes"][0]["tasks"]
    assert fetched == [
        {"name": "git://git.lab.test/tests.git?main#kernel/smoke", "role": "STANDALONE", "params": {},
         "fetch": {"url": "git://git.lab.test/tests.git?main#kernel/smoke", "subdir": ""}},
        {"name": "/kernel/stress", "role": "STANDALONE", "params": {"DURATION": "600"},
         "fetch": {"url": "https://tasks.lab.test/stress.tar.gz", "subdir": "stress"}},
    ]


def test_beakers_extension_elements_are_kept_with_a_warning_and_exported_back():
    job, warnings = parse_job_xml_with_warnings((CORPUS / "beaker_extension_elements.xml").read_bytes())
    assert job["extensions"] == ['<b:option xmlns:b="http://example.com/bar">--foobar arbitrary</b:option>',
                                 '<f:test xmlns:f="http://example.com/foo"><child attribute=""/></f:test>']
    assert [w["path"] for w in warnings][1:3] == ["/job/{http://example.com/bar}option",
                                                  "/job/{http://example.com/foo}test"]
    exported = render_job_xml(job).decode()
    assert '<b:option xmlns:b="http://example.com/bar">--foobar arbitrary</b:option>' in exported
    # one without a namespace of its own is no extension: the grammar still names it
    with pytest.raises(Invalid, match="line 1: <option> is not allowed inside <job>"):
        parse_job_xml(b"<job><option/><recipeSet><recipe/></recipeSet></job>")
    with pytest.raises(Invalid, match=r"extensions\[0\]: must be one XML element in a namespace of its own"):
        normalise_job({"recipe_sets": [{"recipes": [{}]}], "extensions": ["<option/>"]})


def test_an_exported_guest_recipes_run_data_is_dropped_and_the_same_cc_merged():
    job, warnings = parse_job_xml_with_warnings((CORPUS / "beaker_exported_guest_recipe.xml").read_bytes())
    guest_path = "/job/recipeSet[1]/recipe[1]/guestrecipe[1]"
    dropped = [w["path"] for w in warnings if "exported job" in w["message"] or "exported job's run" in w["message"]]
    assert {f"{guest_path}/@{name}" for name in ("id", "status", "result", "system", "kickstart_url", "mac_address",
                                                 "nfs_location", "duration")} <= set(dropped)
    assert {f"{guest_path}/installation[1]", f"{guest_path}/logs[1]", f"{guest_path}/roles[1]",
            f"{guest_path}/task[1]/results[1]"} <= set(dropped)
    assert job["notify"]["cc"] == ["qe@lab.test", "virt-lead@lab.test"]
    assert normalise_job({"notify": {"cc": ["a@lab.test", "a@lab.test"]},
                          "recipe_sets": [{"recipes": [{}]}]})["notify"]["cc"] == ["a@lab.test"]


def test_a_custom_distros_image_and_a_guest_without_guestargs_are_read():
    recipe = parse_job_xml((CORPUS / "beaker_custom_distro_image.xml").read_bytes())["recipe_sets"][0]["recipes"][0]
    assert recipe["distro"]["image"] == {"url": "images/pxeboot/netboot.img"}
    guest = parse_job_xml((CORPUS / "beaker_guest_without_guestargs.xml").read_bytes())[
        "recipe_sets"][0]["recipes"][0]["guests"][0]
    assert (guest["guestname"], guest["guestargs"]) == ("vm1", "")
