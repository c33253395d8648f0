# The two commands of the README's Quickstart: `make demo` and `make test`.
# Everything a bare machine needs (Python 3.11 and make) is installed from requirements.lock.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-neo4j bench lock clean data

# Weka's example ARFF files (diabetes, ionosphere, vote, segment, ...): the benchmarks and
# tests on real data read them from here. Debian's `weka` package ships them; only the .deb
# is fetched and unpacked (installing it would pull in a Java runtime for nothing).
DATA  := .data
WEKA  := $(DATA)/weka

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "graphlabel needs Python 3.11, found " + sys.version'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

demo: $(STAMP)
	$(BIN)/graphlabel demo

data: $(WEKA)/.fetched

$(WEKA)/.fetched:
	rm -rf $(DATA)/deb && mkdir -p $(DATA)/deb $(WEKA)
	cd $(DATA)/deb && (apt-get download weka >/dev/null 2>&1 || (apt-get update -qq && apt-get download weka))
	dpkg-deb -x $(DATA)/deb/weka_*.deb $(DATA)/deb/root
	cp $(DATA)/deb/root/usr/share/doc/weka/examples/*.arff $(WEKA)/
	rm -rf $(DATA)/deb
	touch $@

test: $(STAMP) data
	$(BIN)/python -m pytest -m "not neo4j"

test-neo4j: $(STAMP)
	$(BIN)/python -m pytest -m neo4j

bench: $(STAMP) data
	$(BIN)/python -m bench

# Re-pin every dependency after editing pyproject.toml (needs network; uv comes from the venv).
lock: $(STAMP)
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements.lock

clean:
	rm -rf $(VENV) .graphlabel .pytest_cache $(DATA)
