"""Beaker's job reads without a login (bkr job-results, job-list, job-watch never log in) are refused unless
the site makes jobs public (beaker_public_jobs); the refusal is one Fault line saying so."""
import xmlrpc.client

from .test_jobs_api import JOB_XML, post_xml, setup_lab


def call(lab, method: str, *params):
    body = xmlrpc.client.dumps(params, method, allow_none=True)
    response = lab.client.post("/bkr/client/", data=body, content_type="text/xml")
    assert response.status_code == 200
    try:
        return xmlrpc.client.loads(response.data)[0][0]
    except xmlrpc.client.Fault as fault:
        return fault


def test_job_reads_without_a_login_are_refused_where_jobs_are_private(lab):
    setup_lab(lab)
    status, job = post_xml(lab, "alice", JOB_XML)
    assert status == 201
    for method, params in (("taskactions.to_xml", (f"J:{job['id']}",)),
                           ("taskactions.task_info", (f"J:{job['id']}", False)), ("jobs.filter", ({},))):
        fault = call(lab, method, *params)
        assert isinstance(fault, xmlrpc.client.Fault), (method, fault)
        assert "does not log in" in fault.faultString or "only to those who log in" in fault.faultString
        assert "beaker_public_jobs" in fault.faultString and "\n" not in fault.faultString
