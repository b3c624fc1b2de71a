# `make install` builds .venv/ from plain python3; `make test` and `make demo`
# install first when needed, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   := $(CURDIR)/.demo-store

.PHONY: install test soak demo bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

soak: install
	$(BIN)/python -m pytest -q -m soak -p no:randomly

demo: install
	@rm -rf $(DEMO)
	@echo "== ingest every sample session (one per format)"
	$(BIN)/trace --store $(DEMO) ingest sample_sessions
	@echo "== ingest again: nothing is added twice"
	$(BIN)/trace --store $(DEMO) ingest sample_sessions
	@echo "== what the store holds"
	$(BIN)/trace --store $(DEMO) stats
	@echo "== find the event that mentions a git sha, then show it verbatim"
	$(BIN)/trace --store $(DEMO) export | grep -m1 -o '"seq":[0-9]*,"session_id":"[^"]*"' || true
	$(BIN)/trace --store $(DEMO) show 1..3
	@echo "== prove the log was not altered"
	$(BIN)/trace --store $(DEMO) verify

bench: install
	$(BIN)/trace bench ingest

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .hypothesis
