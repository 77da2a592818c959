# lablease: `make demo` and `make test` are all a new user needs; both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Venvs of their own for tools whose pins clash with .venv's (scripts/requirements/NAME.txt), and the
# older ansible-core branches whose sanity tests `make test` also runs (docs/ansible.md).
TOOLS := $(VENV)/tools
CORE_BRANCHES := 2.16 2.17 2.18
# Bytecode is kept, in .cache/pycache rather than beside the sources: an environment with
# PYTHONDONTWRITEBYTECODE (some container images set it) makes every Python process compile lablease
# again, about a second of CPU each, and the suite starts thousands (servers, CLIs, playbooks).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(CURDIR)/.cache/pycache

.PHONY: venv build-deps demo demo-qemu test unit test-server api-fuzz test-collection collection-checks postgresql qemu deploy-tools chromium directory beaker-client mrack java bench clean \
	bmc collection-link shellcheck sanity units lint molecule playbooks \
	certify certification-tools galaxy-importer collection-docs execution-environment changelog collection-readme

venv: $(STAMP)

# Installs go through uv (scripts/requirements/uv.txt), which fetches in parallel and links from its cache: a
# fresh .venv and the tool venvs below take seconds where pip took minutes. The server's gssapi builds
# against Debian's libkrb5-dev (build-deps).
UV := $(BIN)/uv
# The system's certificate store (where a site's own CA is added), as pip's requests reads it.
export UV_NATIVE_TLS := 1
# Extensions built from source (gssapi) compile in parallel (scripts/requirements/build_ext.cfg).
export DIST_EXTRA_CONFIG := $(CURDIR)/scripts/requirements/build_ext.cfg
$(STAMP): server/pyproject.toml requirements-dev.txt scripts/requirements/uv.txt | build-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -r scripts/requirements/uv.txt
	$(UV) pip install -q --python $(BIN)/python -e 'server[test]' -r requirements-dev.txt
	touch $(STAMP)

# What the Python packages built from source need (gssapi: libkrb5-dev and a compiler; Debian packages).
build-deps:
	scripts/ensure-build-deps.sh

postgresql:
	scripts/ensure-postgresql.sh

# QEMU, busybox and boot-disk tools for the real-VM netboot test (Debian packages); the guest
# kernel is downloaded (not installed) into .cache/guest by the test itself.
qemu:
	scripts/ensure-qemu.sh

# systemd-analyze, nginx, docker-compose and openssl check the files in deploy/ (Debian packages).
deploy-tools:
	scripts/ensure-deploy-tools.sh

# What the power drivers are tested against: OpenIPMI's ipmi_sim, ipmitool and libvirtd (Debian packages,
# scripts/ensure-bmc.sh), then sushy-tools' Redfish emulator in a venv of its own (scripts/requirements/sushy-tools.txt;
# its libvirt binding builds against the libvirt-dev that script installs).
bmc: venv
	scripts/ensure-bmc.sh
	$(MAKE) --no-print-directory $(TOOLS)/sushy-tools/.installed

# Debian's chromium for the browser tests of the web pages (tests/e2e/web, Playwright drives it; no browser download).
chromium:
	scripts/ensure-chromium.sh

# OpenLDAP's slapd and MIT Kerberos' KDC for the directory and Kerberos sign-in tests (Debian packages).
directory:
	scripts/ensure-directory.sh

# The real Beaker client (`bkr`, beaker-client from PyPI) in a venv of its own, for the tests of the hub at /bkr
# (docs/beaker.md); its gssapi dependency builds against Debian's libkrb5-dev.
beaker-client: $(TOOLS)/beaker-client/.installed


# Java 17 for ansible-rulebook's rule engine (the rulebook test, under `playbooks`); Debian's openjdk-17-jre-headless.
java:
	scripts/ensure-java.sh

demo: venv collection-link
	$(BIN)/python scripts/demo.py

# The same flow on a real QEMU VM (software emulation): it netboots lablease's iPXE config, installs through
# the kickstart, boots its disk; its serial console is printed as it comes. State in .lablease-demo-qemu.
demo-qemu: venv collection-link qemu
	$(BIN)/python scripts/demo_qemu.py

# Four parts run side by side (make jobs, each one's output printed whole when it ends): the server suite,
# the API's fuzzing, the playbook tests and the collection's other checks. Much of each waits on servers, VMs
# and playbooks, which leaves room on two cores for the others; and no part waits for another (on a new
# machine the sanity runs of four ansible-core branches first build their own venvs: minutes the playbook
# tests would otherwise have waited behind).
test: venv postgresql qemu deploy-tools chromium bmc directory beaker-client mrack java
	$(MAKE) --no-print-directory -j4 --output-sync=recurse test-server api-fuzz playbooks collection-checks

# Tests run in parallel processes (pytest-xdist), a file's tests together so its module-scoped
# servers start once; most of them wait on real servers, VMs and playbooks rather than compute (alone,
# the server suite keeps two cores 60 % busy: a third process fills the waits). Files go out in the order
# given (xdist would otherwise send the files of most tests first): the end-to-end files, few tests of
# minutes each, start first, and the many short files fill the end instead of a VM test running on alone.
TEST_WORKERS ?= 3
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
PLAYBOOK_WORKERS ?= 2
# Every test run ends with its 20 slowest tests, so a test that grows slow is seen in CI.
DURATIONS := --durations=20

# The fast loop (< 60 s): the pure tiers, no database, server, VM or playbook — domain and planner
# rules (with their hypothesis properties), job XML, kickstart, netboot files, and the collection's
# module unit tests through the .collections link (`units` runs those under ansible-test, as shipped).
unit: venv collection-link
	PYTHONPATH=$(CURDIR)/.collections $(BIN)/pytest $(DURATIONS) tests/server/unit tests/server/jobxml tests/unit

# The server suite and its end-to-end tests (the playbook tests run under `playbooks`, the API's fuzzing
# under `api-fuzz`).
FUZZ := tests/e2e/test_api_fuzz.py
test-server: venv collection-link
	$(BIN)/pytest $(PARALLEL) $(DURATIONS) tests/e2e tests/server --ignore=tests/e2e/ansible --ignore=$(FUZZ)

# The API fuzzed from its own description (docs/api.md, "Fuzzing"), in a process of its own: schemathesis
# builds every operation's boundary cases while collecting, which each process of a parallel run would repeat.
api-fuzz: venv
	$(BIN)/pytest $(DURATIONS) $(FUZZ)

# One step at a time, in this order (also under `make -j`): molecule before lint, as ansible-lint reads the
# copy molecule installs in ~/.ansible/collections. test-collection is these and the playbook tests.
COLLECTION_CHECKS = sanity $(addprefix sanity-,$(CORE_BRANCHES)) units molecule lint certify
collection-checks: venv
	$(MAKE) --no-print-directory -j1 $(COLLECTION_CHECKS)

test-collection: venv
	$(MAKE) --no-print-directory -j1 $(COLLECTION_CHECKS) playbooks

# --- the Ansible collection lablease.lab (the repository root); see docs/ansible.md ---
ANSIBLE_ENV := PATH=$(CURDIR)/$(BIN):$$PATH ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.collections ANSIBLE_CONFIG=$(CURDIR)/ansible.cfg

# Run the collection from the checkout: .collections/ansible_collections/lablease/lab -> ../../..
collection-link:
	mkdir -p .collections/ansible_collections/lablease
	ln -sfn ../../.. .collections/ansible_collections/lablease/lab

# ansible-test's shellcheck sanity test skips silently without the binary; install it (Debian, as root).
shellcheck:
	@command -v shellcheck >/dev/null || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
		(apt-get install -y -qq shellcheck >/dev/null 2>&1 || \
		 (apt-get update -qq >/dev/null && apt-get install -y -qq shellcheck >/dev/null)); } || \
		echo "shellcheck not installed: its sanity test will be skipped"

# Sanity and unit tests run on the built artifact, extracted into a real
# ansible_collections/lablease/lab tree (scripts/ansible-test.sh says why).
# Only the controller's Python version (all sanity tests still run; the modules run on the controller).
PYVERSION = $(shell $(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')

sanity: venv shellcheck
	scripts/ansible-test.sh sanity --venv --python $(PYVERSION)

# The same sanity tests on the older ansible-core branches this Python runs (meta/runtime.yml's
# requires_ansible: >=2.16), each from a venv of its own (scripts/requirements/ansible-core-X.txt);
# `sanity` above is the newest, 2.19, from .venv. 2.20 needs Python >= 3.12 (docs/ansible.md).
# (CORE_BRANCHES and TOOLS are set near the top: test-collection's prerequisites use them.)

# A tool venv per scripts/requirements/NAME.txt, rebuilt when that file changes (kept: make would delete it as an
# intermediate file of a pattern rule).
.PRECIOUS: $(TOOLS)/%/.installed
$(TOOLS)/%/.installed: scripts/requirements/%.txt | venv
	rm -rf $(TOOLS)/$*
	$(UV) venv -q --seed --python $(PYTHON) $(TOOLS)/$*
	$(UV) pip install -q --python $(TOOLS)/$*/bin/python -r $<
	touch $@

# mrack's Beaker provider (tests/server/beaker): its own requirements pull testcloud and libvirt-python, a C build
# against libvirt, for providers the tests never load; so this venv gets what the Beaker provider imports
# (mrack.txt) and mrack itself without its requirements (mrack-no-deps.txt). beaker-client's gssapi needs
# Debian's libkrb5-dev (scripts/ensure-build-deps.sh).
mrack: $(TOOLS)/mrack/.installed

$(TOOLS)/mrack/.installed: scripts/requirements/mrack.txt scripts/requirements/mrack-no-deps.txt | venv
	rm -rf $(TOOLS)/mrack
	$(UV) venv -q --seed --python $(PYTHON) $(TOOLS)/mrack
	$(UV) pip install -q --python $(TOOLS)/mrack/bin/python -r scripts/requirements/mrack.txt
	$(UV) pip install -q --python $(TOOLS)/mrack/bin/python --no-deps -r scripts/requirements/mrack-no-deps.txt
	touch $@

sanity-%: venv shellcheck $(TOOLS)/ansible-core-%/.installed
	ANSIBLE_CORE_VENV=$(TOOLS)/ansible-core-$* scripts/ansible-test.sh sanity --venv --python $(PYVERSION)

units: venv
	scripts/ansible-test.sh units --venv --python $(PYVERSION)

# What Galaxy, Automation Hub and partner certification check beyond sanity and lint, on the built
# artifact, with the tools of scripts/requirements/certification.txt (scripts/certify.py; docs/ansible.md,
# "Certification and releases"). Each fails on any problem its tool reports.
CERTIFY := $(TOOLS)/certification/bin/python scripts/certify.py
certify: galaxy-importer collection-docs execution-environment changelog collection-readme

certification-tools: $(TOOLS)/certification/.installed

galaxy-importer: certification-tools
	$(CERTIFY) galaxy-importer

collection-docs: certification-tools
	$(CERTIFY) docs

execution-environment: certification-tools
	$(CERTIFY) execution-environment

changelog: certification-tools
	$(CERTIFY) changelog

collection-readme: certification-tools
	$(CERTIFY) readme

lint: venv collection-link
	$(ANSIBLE_ENV) $(BIN)/ansible-lint --offline

molecule: venv collection-link
	cd roles/lease && $(ANSIBLE_ENV) $(CURDIR)/$(BIN)/molecule test

# The real ansible-rulebook (scripts/requirements/ansible-rulebook.txt) runs tests/e2e/ansible/test_rulebook.py.
playbooks: venv collection-link java $(TOOLS)/ansible-rulebook/.installed
	$(ANSIBLE_ENV) ANSIBLE_RULEBOOK_VENV=$(CURDIR)/$(TOOLS)/ansible-rulebook \
		$(BIN)/pytest -n $(PLAYBOOK_WORKERS) --dist loadfile --no-loadscope-reorder $(DURATIONS) tests/e2e/ansible -p no:cacheprovider

bench: venv postgresql beaker-client
	$(BIN)/python bench/reserve.py
	$(BIN)/python bench/events.py
	$(BIN)/python bench/free_systems.py
	$(BIN)/python bench/scheduler.py
	$(BIN)/python bench/beaker.py

clean:
	rm -rf $(VENV) .collections tests/output .lablease .lablease-demo .lablease-demo-qemu .pytest_cache .cache
