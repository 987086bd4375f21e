# dynamo-replay: `make demo` and `make test` install whatever is missing, then do their job.
# Both are idempotent: with everything present they only rebuild what changed.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV   := .venv
PY     := $(VENV)/bin/python
BUILD  := build/py
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := g++ make libzstd-dev libcereal-dev libxxhash-dev libgtest-dev \
                nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev zstd \
                libmlir-19-dev mlir-19-tools llvm-19-dev \
                chromium redis-server
# Exactly this torch: the local CPU build. Anything unpinned pulls GBs of CUDA wheels.
# transformers builds the real models the tests and benchmarks run (from configs, no downloads).
# tlparse (and Debian's chromium, above) read the exports and the HTML report in their tests.
# redis is the client of the fleet store; its tests start Debian's redis-server (above).
PY_PACKAGES  := torch==2.13.0 numpy pytest scikit-build-core pybind11 cmake ninja transformers==5.23.0 \
                tlparse==0.4.3 redis==8.1.0 expecttest
# torch-mlir checks the torch-dialect form (tests/python/test_torch_mlir.py). --no-deps: nothing
# may touch the pinned torch; what it needs besides (numpy, packaging) is installed above.
TORCH_MLIR   := torch-mlir==20261001

CXX_SOURCES := CMakeLists.txt pyproject.toml $(shell find cmake store capture replay tools python tests/fuzz \
                 \( -name '*.cc' -o -name '*.h' -o -name '*.def' -o -name 'CMakeLists.txt' -o -name '*.cmake' -o -name '*.py' -o -name '*.json' -o -name '*.check' \) 2>/dev/null)
# The editable install maps each Python module to its file when it is installed: a module added,
# moved or removed (a folder's time changes) installs again.
PY_FOLDERS := $(shell find python/dynamo_replay -type d -not -name __pycache__)

.PHONY: help demo test test-cpp test-python fuzz bench system-packages clean

help:
	@echo "make demo   install what is missing, capture a GPT job, replay it in a fresh process, inspect the store, run a stored graph"
	@echo "make test   install what is missing, run the C++ (ctest) and Python (pytest) tests"
	@echo "make bench  run the store benchmark (about 1 GB of artifacts; minutes)"

# Debian packages: check each (fast), install only the missing ones.
system-packages:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

$(PY):
	python3 -m venv $(VENV)

$(VENV)/.deps: $(PY) Makefile
	$(PY) -m pip install -q --disable-pip-version-check $(PY_PACKAGES)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps $(TORCH_MLIR)
	touch $@

# The package, its C++ core and the C++ tests, built by scikit-build-core in $(BUILD).
$(VENV)/.built: $(VENV)/.deps $(CXX_SOURCES) $(PY_FOLDERS) | system-packages
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation \
	  -Ccmake.define.DYNREP_BUILD_TESTS=ON -e .
	touch $@

demo: system-packages $(VENV)/.built
	$(PY) examples/demo.py

# Runs both suites even when the first fails, and fails if either did.
test: system-packages $(VENV)/.built
	@status=0; \
	$(MAKE) --no-print-directory test-cpp || status=1; \
	$(MAKE) --no-print-directory test-python || status=1; \
	exit $$status

test-cpp:
	$(VENV)/bin/ctest --test-dir $(BUILD) --output-on-failure

test-python:
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest

bench: system-packages $(VENV)/.built
	$(PY) benchmarks/store_bench.py

clean:
	rm -rf build $(VENV)/.built
