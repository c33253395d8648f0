# The two commands of the README's Quickstart: `make demo` and `make test`.
# Everything a bare machine needs (Python 3.11 to 3.13 and make) is installed from the lock files:
# `make demo` graphlabel's own dependencies (requirements-run.lock), `make test` also the test
# tools and the text extra (requirements.lock);
# with Java 17+ and Maven, `make test` also assembles Neo4j 5.26 + GDS 2.13 from Maven Central
# and runs the live Neo4j suite against it (tests/live_neo4j.py; without them it says so).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: demo test test-neo4j neo4j-up neo4j-down bench lock clean test-all data browser

# Weka's example ARFF files (diabetes, ionosphere, vote, segment, ...): the benchmarks and
# tests on real data read them from here. Debian's `weka` package ships them; only the .deb
# is fetched and unpacked (installing it would pull in a Java runtime for nothing). Its jar
# is kept too: the tests run Weka itself to write a sparse ARFF file, as a Weka user does.
DATA  := .data
WEKA  := $(DATA)/weka

# graphlabel and what it runs on: requirements-run.lock holds requirements.lock's pins of
# them (make lock writes both), without the test tools and the text extra, whose PyTorch
# brings CUDA wheels (the only ones PyPI has for Linux). 146 packages, 223 MB to download,
# 1.1 GB installed, 41 s on the 2-core VM; everything: 201, 3.2 GB, 6.9 GB, 104 s.
$(RUN_STAMP): requirements-run.lock pyproject.toml
	$(PYTHON) -c 'import sys; assert (3, 11) <= sys.version_info[:2] <= (3, 13), "graphlabel needs Python 3.11 to 3.13, found " + sys.version'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-run.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

# Everything: the test tools, the benchmarks' peers and the text extra too.
$(STAMP): requirements.lock $(RUN_STAMP)
	$(BIN)/pip install --quiet -r requirements.lock
	touch $@

demo: $(RUN_STAMP)
	$(BIN)/graphlabel demo

data: $(WEKA)/.fetched-with-jar

$(WEKA)/.fetched-with-jar:
	rm -rf $(DATA)/deb && mkdir -p $(DATA)/deb $(WEKA)
	cd $(DATA)/deb && (apt-get download weka >/dev/null 2>&1 || (apt-get update -qq && apt-get download weka))
	dpkg-deb -x $(DATA)/deb/weka_*.deb $(DATA)/deb/root
	cp $(DATA)/deb/root/usr/share/doc/weka/examples/*.arff $(WEKA)/
	cp -L $(DATA)/deb/root/usr/share/java/weka.jar $(WEKA)/weka.jar
	rm -rf $(DATA)/deb
	touch $@

# Debian's Chromium, for the tests that open the Prefect UI in a real browser
# (tests/test_prefect_ui.py): installed when missing and this is root (about 10 s); otherwise
# those tests say in one line that they did not run (and fail in CI).
browser:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || \
	  apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || \
	  (apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null)

# ruff and mypy first (their settings are in pyproject.toml): seconds, and a finding fails the target.
test: $(STAMP) data browser
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

# Only the live Neo4j suite (a server of its own, or the one NEO4J_URI names).
test-neo4j: $(STAMP)
	$(BIN)/python -m pytest -m neo4j

# A local Neo4j 5.26 + GDS 2.13 for people: bolt://127.0.0.1:7687, password $$NEO4J_PASSWORD
# (default graphlabel-dev), data kept in neo4j-server/target/home between runs.
neo4j-up:
	$(PYTHON) neo4j-server/neo4j_server.py up $(NEO4J_ARGS)

neo4j-down:
	$(PYTHON) neo4j-server/neo4j_server.py down $(NEO4J_ARGS)

bench: $(STAMP) data
	$(BIN)/python -m bench

# Re-pin every dependency after editing pyproject.toml (needs network; uv comes from the venv).
# One universal lock: the same pins on every supported Python, with markers where a version
# needs its own (`make test-all` installs and tests it on each); requirements-run.lock is its
# subset without the extras, constrained to the same pins (tests/test_docker_image.py checks).
lock: $(STAMP)
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --extra dev --extra text --universal --python-version 3.11 -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 -c requirements.lock -o requirements-run.lock

clean:
	rm -rf $(VENV) .venv-3.* .graphlabel .pytest_cache neo4j-server/target $(DATA)

# The suite on every CPython the lock supports, each in a venv of its own (.venv-3.12, ...):
# python3.X from PATH, else pyenv's newest 3.X.
PYTHONS := 3.11 3.12 3.13
test-all:
	@set -e; for v in $(PYTHONS); do \
	  py=$$(python$$v -c 'import sys; print(sys.executable)' 2>/dev/null || \
	       PYENV_VERSION=$$(pyenv versions --bare 2>/dev/null | grep "^$$v\." | tail -1) \
	       python$$v -c 'import sys; print(sys.executable)'); \
	  echo "== Python $$v: $$py"; \
	  $(MAKE) --no-print-directory test PYTHON=$$py VENV=.venv-$$v; \
	done
