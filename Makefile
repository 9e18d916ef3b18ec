# Two commands on a fresh machine (python3, make and a C compiler):
#   make figures   set up .venv, then re-execute every study and regenerate the committed figures/ and tables/
#                  (`medeval run --publish`; a plain `medeval run` writes only to runs/<study>/<run>/)
#   make test      set up .venv, then run the whole test suite (unit, golden, notebooks via nbval)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.medeval-installed
JOBS   ?= 2

# llama-cpp-python (extra "local") builds from source; portable flags keep the wheel cacheable. Only what the
# embedded model needs: no multimodal library (LLAVA), none of llama.cpp's tests, tools, examples, server or app
# binaries (already off when llama-cpp-python builds llama.cpp as a subproject; said here so an upstream default
# cannot turn them on), no HTTPS (the model is a local file), and no "common" library, which llama-cpp-python
# forces on but never loads (tools/llama_cpp_minimal.cmake turns it off again; the compile takes a third as long).
LLAMA_CMAKE := $(CURDIR)/tools/llama_cpp_minimal.cmake
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
  -DCMAKE_PROJECT_INCLUDE_BEFORE=$(LLAMA_CMAKE)
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Compiled modules are cached (__pycache__/, git-ignored): with PYTHONDONTWRITEBYTECODE set, every process (each
# test worker, kernel and CLI call) compiles the toolkit again, and pytest rewrites every test file again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup figures test test-fast lint docs wheel lab apps report clean-runs help

help:
	@echo "make figures | make test | make test-fast | make lint | make docs | make wheel | make lab | make report"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install only when the dependency list changes: a warm `make` is a no-op here. llama-cpp-python (pinned in
# pyproject.toml's extra "local") compiles for minutes: its wheel is built while pip installs everything else,
# then installed from it.
LLAMA_PIN := $(shell sed -n 's/^ *"\(llama-cpp-python==[^"]*\)".*/\1/p' pyproject.toml | head -n 1)
$(STAMP): pyproject.toml $(LLAMA_CMAKE) | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip "setuptools>=77"
	@rm -rf $(VENV)/wheels; mkdir -p $(VENV)/wheels; build=; \
	if [ -n '$(LLAMA_PIN)' ]; then \
	  $(BIN)/python -m pip wheel -q --no-deps -w $(VENV)/wheels '$(LLAMA_PIN)' > $(VENV)/llama-build.log 2>&1 & build=$$!; \
	fi; \
	$(BIN)/python -m pip install -q -e '.[dev]' || { [ -z "$$build" ] || kill $$build 2>/dev/null; exit 1; }; \
	[ -z "$$build" ] || wait $$build || { cat $(VENV)/llama-build.log; echo "error: building $(LLAMA_PIN) failed"; exit 1; }
	$(BIN)/python -m pip install -q -e '.[dev,local]' --find-links $(VENV)/wheels
	@rm -rf $(VENV)/wheels
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (medeval_kit)" >/dev/null
	@touch $(STAMP)

# numba compiles the exhaustive aspect search once, into medeval_kit/judge/__pycache__ (git-ignored), keyed by the
# source file: about 20 s of CPU. Done here, it is done once; otherwise every test process and kernel that searches
# before the cache is written compiles it too (in a fresh clone, `make test` took a minute longer than in a
# checkout that had the cache).
KERNELS_STAMP := $(VENV)/.medeval-kernels-compiled
$(KERNELS_STAMP): medeval_kit/judge/_kernels.py $(STAMP)
	@$(BIN)/python -c "from medeval_kit.judge.aspects import warm_up; print(f'aspect search compiled (numba) in {warm_up():.0f} s')"
	@touch $(KERNELS_STAMP)

# The toolkit's bytecode, written once (0.1 s when up to date): in a fresh clone the test processes, kernels and
# CLI calls that start together would each compile the modules nobody had written yet.
setup: $(STAMP) $(KERNELS_STAMP)
	@$(BIN)/python -m compileall -q medeval_kit >/dev/null

APPS := $(wildcard notebooks/*_app.py)

# The apps and the report read what the runs wrote; they are built side by side.
figures: setup
	$(BIN)/medeval run --publish --jobs $(JOBS)
	@$(MAKE) --no-print-directory apps & apps=$$!; $(BIN)/medeval report; report=$$?; wait $$apps && exit $$report

# Each marimo app exported to a self-contained HTML page (outputs embedded; the page loads
# marimo's frontend from its CDN when opened), JOBS at a time; one that fails fails the target.
apps: setup
	@mkdir -p figures/apps
	@printf '%s\n' $(APPS) | xargs -P $(JOBS) -n 1 sh -c 'name=$$(basename "$$1" .py); \
	  $(BIN)/marimo export html "$$1" -o figures/apps/$$name.html --force >/dev/null && echo "exported figures/apps/$$name.html"' sh

# The whole suite, on TEST_JOBS processes (pytest-xdist, file by file: a notebook's cells share one kernel). The
# notebooks run under nbval from a scratch copy (.nbval/: the notebooks, the committed tables they read, the
# project marker and a link to data/ for the LLM cache), so their outputs never touch figures/ or tables/;
# MEDEVAL_CHECK_TREE fails the run if the checkout changed all the same (tests/conftest.py).
# One process more than the cores: part of the suite's time is spent waiting (kernels, browsers, local servers), so
# a third process on 2 cores keeps them busy (4 min 29 s and 419 CPU-s on 2 processes, 4 min 1 s and 440 on 3).
# --no-loadscope-reorder keeps the files in collection order, longest first (tests/conftest.py LONGEST_FIRST).
TEST_JOBS ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2) + 1 )))
NBVAL := .nbval
test: setup
	rm -rf $(NBVAL) && mkdir -p $(NBVAL) && cp -R notebooks tables medeval.toml $(NBVAL)/ && ln -s ../data $(NBVAL)/data
	MEDEVAL_CACHE_MODE=replay MEDEVAL_CHECK_TREE=1 $(BIN)/python -m pytest tests $(NBVAL)/notebooks --nbval-lax -q \
	  -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

# The inner loop: the unit tests without notebooks, browsers, the embedded model or the slow files
# (tests/conftest.py SLOW_FILES), on TEST_JOBS processes, with no warm-kernel process (few kernels start).
# `make test` stays the whole suite.
test-fast: setup
	MEDEVAL_CACHE_MODE=replay MEDEVAL_WARM_KERNELS=0 $(BIN)/python -m pytest tests -q -n $(TEST_JOBS) -m "not slow and not browser and not local_model"

# ruff's rules and version are in pyproject.toml ([tool.ruff], extra "dev")
lint: setup
	$(BIN)/ruff check medeval_kit tests benchmarks

# The documentation site (mkdocs.yml) in site/ (gitignored), with --strict: any warning (a broken link or
# cross-reference, a page missing from the nav) fails. The extra "docs" is installed on first use only, not
# by `make setup`; its own stamp re-installs it when pyproject.toml changes.
DOCS_STAMP := $(VENV)/.medeval-docs-installed

$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install -q -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	DISABLE_MKDOCS_2_WARNING=true NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --clean --site-dir site

# The installable package (prompts, prices, published numbers, bundled datasets, notebooks and example
# studies inside it, see setup.py) in dist/
wheel: setup
	$(BIN)/python -m pip wheel --no-deps -q -w dist .

lab: setup
	$(BIN)/jupyter lab --notebook-dir=notebooks

report: setup
	$(BIN)/medeval report

clean-runs:
	rm -rf runs
