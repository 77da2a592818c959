"""The corpus of job documents (tests/server/jobxml/corpus): each is read, and written back unchanged.

The integration test tests/server/integration/test_job_language.py submits and schedules each one.
"""
from pathlib import Path

import pytest

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
