# KUAE Ops — the two commands: `make run` and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
DEMO_ENV := KUAE_DEMO=1 DJANGO_HTTPS=0 PORT=$(PORT) PATH="$(CURDIR)/$(VENV)/bin:$$PATH"

.PHONY: run test test-quick lint bench bench-scale fuzz load lock clean

# Every dependency, transitive ones included, from the hash-checked development lock (the
# runtime's plus the test tools); then the project and its node agent (agent/, the
# kuae-agent distribution; its one dependency, httpx, is locked). Production installs
# requirements.lock, the runtime alone. (`make lock` rewrites both after a change to the pins.)
#
# LDAP sign-in's libraries (the `ldap` extra, requirements-ldap.lock) are installed only where
# OpenLDAP's headers are, since python-ldap compiles against them: without them `make run`
# still works, with LDAP sign-in unavailable (KUAE_LDAP_URL then stops start-up, saying so).
LDAP_HEADER := /usr/include/ldap.h
$(VENV)/.installed: pyproject.toml agent/pyproject.toml requirements-dev.lock requirements-ldap.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet --require-hashes -r requirements-dev.lock
	@if [ -e $(LDAP_HEADER) ]; then \
	  $(VENV)/bin/pip install --quiet --require-hashes -r requirements-ldap.lock; \
	else echo "$(LDAP_HEADER) not found (Debian: apt-get install libldap2-dev libsasl2-dev):" \
	  "LDAP sign-in's python-ldap not installed; LDAP sign-in and its tests unavailable"; fi
	$(VENV)/bin/pip install --quiet --no-deps -e . -e ./agent
	touch $@

# The pages' translations (docs/pages.md, Language): gettext catalogues in locale/, compiled
# here with GNU gettext's msgfmt (Debian's gettext) so a fresh clone serves them.
MO := $(patsubst %.po,%.mo,$(wildcard locale/*/LC_MESSAGES/*.po))
%.mo: %.po
	@command -v msgfmt >/dev/null || { echo "msgfmt not found: install gettext (apt-get install gettext) to compile the translations"; exit 1; }
	msgfmt --check-format -o $@ $<

## run: the dashboard on the embedded default (SQLite, filesystem broker) with a live demo cluster
run: $(VENV)/.installed $(MO)
	@$(PY) -m kuaeweb.port_free "$(PORT)"
	@$(DEMO_ENV) $(PY) manage.py migrate --noinput -v0
	@$(DEMO_ENV) $(PY) manage.py collectstatic --noinput -v0
	@$(DEMO_ENV) $(PY) manage.py demo_setup
	@echo "KUAE Ops on http://127.0.0.1:$(PORT)/ — sign in as demo / demo (operator); engineers demo-engineer and demo-reviewer / demo (one writes a postmortem, the other reviews it). Ctrl-C stops everything."
	@$(DEMO_ENV) exec $(VENV)/bin/honcho start -f Procfile

## test: lint, types, then the whole suite (on DATABASE_URL/CELERY_BROKER_URL when set); after
## a run on PostgreSQL/Redis, the tests marked `embedded` again on the embedded default
# The browser tests' accessibility scanner (axe-core, pinned in tests/e2e/package-lock.json),
# installed with npm where npm is; without it the scan is skipped (and fails under CI).
AXE := tests/e2e/node_modules/axe-core/axe.min.js
$(AXE): tests/e2e/package.json tests/e2e/package-lock.json
	@if command -v npm >/dev/null; then npm ci --prefix tests/e2e --no-audit --no-fund --silent; \
	else echo "npm not found: the accessibility scan will be skipped"; fi

# The OpenID Connect provider the sign-in tests run (panva's oidc-provider, pinned in
# tests/oidc/package-lock.json; docs/sign-in.md), installed the same way; without npm those
# tests are skipped (and fail under CI).
OIDC_PROVIDER := tests/oidc/node_modules/oidc-provider/package.json
$(OIDC_PROVIDER): tests/oidc/package.json tests/oidc/package-lock.json
	@if command -v npm >/dev/null; then npm ci --prefix tests/oidc --no-audit --no-fund --silent && touch $@; \
	else echo "npm not found: the OpenID Connect sign-in tests will be skipped"; fi

# The suite runs in PYTEST_WORKERS processes (pytest-xdist), more than a 2-core machine has
# cores: most of its time is spent waiting — on the live server and Chromium, Celery workers,
# Alertmanager, Prometheus, Slurm and PostgreSQL started for a test, subprocesses — not
# computing (2 workers on 2 cores: 420 s of CPU in 680 s). `--dist loadscope` keeps a module on
# one worker, so its module fixtures are set up once — a simulated history its tests read
# (tests/conftest.py `module_rows`), the one Slurm lab (its ports are fixed) — but each browser
# test is a unit of its own; browser and fault tests are handed out first (tests/conftest.py).
# Each worker has its own database (test_…_gw0, or var/test-PID/gw0/ on SQLite) and var/.
PYTEST_WORKERS ?= 4
PYTEST := $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder
#
# The embedded default (SQLite, filesystem broker) is tested whole wherever `make test` runs
# without DATABASE_URL — a fresh machine, a developer's. After a run on PostgreSQL/Redis (CI,
# .ci/run) the second pass is not the whole suite again but the tests marked `embedded`: those
# that drive what is written differently for SQLite or the filesystem broker (bulk writes,
# epoch and JSON SQL, partitions' plain-table fallback and retention, NaN and 64-bit bounds,
# WAL with immediate transactions under concurrent writers, real Celery workers over the
# filesystem broker, the no-variables start). tests/conftest.py (EMBEDDED) lists the modules
# and why; on those files they cover every line the whole suite covers on SQLite (but for
# one of the Prometheus source's, which is not SQLite's: measured with coverage.py per test).
test: $(VENV)/.installed $(AXE) $(OIDC_PROVIDER) $(MO)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m tests.typecheck
	$(PYTEST)
	@if [ -n "$$DATABASE_URL$$CELERY_BROKER_URL" ]; then \
	  echo "--- embedded default (SQLite, filesystem broker): the tests marked embedded ---"; \
	  env -u DATABASE_URL -u CELERY_BROKER_URL $(PYTEST) -m embedded; \
	fi

## test-quick: the development loop: the suite but the tests marked `slow` (real peers,
## workers, browsers and subprocesses: tests/conftest.py SLOW), on the embedded default
## unless DATABASE_URL is set; `make test` (and CI) runs everything
test-quick: $(VENV)/.installed $(MO)
	$(PYTEST) -m "not slow"

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

## bench: figures against a baseline measured in the same run (PostgreSQL when DATABASE_URL is set)
bench: $(VENV)/.installed
	$(PY) -m tests.bench.run

## bench-scale: make bench's last part alone — sweep, checks and pages at 10,240 and 102,400 GPUs
bench-scale: $(VENV)/.installed
	$(PY) -m tests.bench.scale $(SCALE_ARGS)

## load: gunicorn, 2 workers and beat on PostgreSQL/Redis under agent and browser load
load: $(VENV)/.installed
	$(PY) -m tests.load.run $(LOAD_ARGS)

## fuzz: the long schemathesis run (make test runs a short one); KUAE_FUZZ_EXAMPLES per operation
fuzz: $(VENV)/.installed
	KUAE_FUZZ_EXAMPLES=$${KUAE_FUZZ_EXAMPLES:-200} $(PY) -m pytest -m fuzz -q

## lock: pin every transitive dependency with hashes (pip-tools, in a throw-away venv):
## requirements.lock for production, requirements-dev.lock (with the dev extra) for make,
## requirements-ldap.lock (the runtime's with the ldap extra) for LDAP sign-in,
## agent/requirements.lock for the node agent on GPU nodes (httpx and what it needs, no torch)
COMPILE := var/lock-venv/bin/pip-compile --quiet --generate-hashes --strip-extras \
  --allow-unsafe --no-emit-index-url --no-emit-find-links
lock:
	python3 -m venv var/lock-venv && var/lock-venv/bin/pip install --quiet pip-tools==7.6.2
	$(COMPILE) -o requirements.lock pyproject.toml
	$(COMPILE) --extra dev -o requirements-dev.lock pyproject.toml
	$(COMPILE) --extra ldap -o requirements-ldap.lock pyproject.toml
	$(COMPILE) -o agent/requirements.lock agent/pyproject.toml

clean:
	rm -rf var/ $(VENV)
