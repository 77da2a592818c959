# lablease: `make demo` and `make test` are all a new user needs; both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv demo test test-server test-collection postgresql bench clean

venv: $(STAMP)

$(STAMP): server/pyproject.toml requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e 'server[test]' -r requirements-dev.txt
	touch $(STAMP)

postgresql:
	scripts/ensure-postgresql.sh

demo: venv
	$(BIN)/python scripts/demo.py

test: venv postgresql test-server test-collection

test-server: venv
	$(BIN)/pytest

test-collection: venv

bench: venv postgresql
	$(BIN)/python bench/reserve.py
	$(BIN)/python bench/free_systems.py

clean:
	rm -rf $(VENV) .collections tests/output .lablease .pytest_cache
