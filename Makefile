# dynamo-replay: `make demo` and `make test` install whatever is missing, then do their job.
# Both are idempotent: with everything present they only rebuild what changed.
# TORCH picks the PyTorch release; each has its own environment and build tree:
#   make test TORCH=2.14.1     # .venv-2.14.1, build/py-2.14.1
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The releases dynamo-replay supports (python/dynamo_replay/_torch/releases.py says the same).
SUPPORTED_TORCH := 2.13.0 2.14.1 2.15.0
TORCH  ?= 2.15.0
ifeq ($(filter $(TORCH),$(SUPPORTED_TORCH)),)
  $(error TORCH=$(TORCH) is not a supported release: $(SUPPORTED_TORCH))
endif
VENV   := .venv-$(TORCH)
PY     := $(VENV)/bin/python
BUILD  := build/py-$(TORCH)
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := g++ make libzstd-dev libcereal-dev libxxhash-dev libgtest-dev \
                nlohmann-json3-dev libcli11-dev libfmt-dev libssl-dev zstd ccache \
                libmlir-19-dev mlir-19-tools llvm-19-dev \
                chromium redis-server clang-format-19
# Exactly this torch, through a constraints file of the environment's own: nothing else may pick
# or replace it, and it overrides a machine-wide cap on torch releases. 2.13.0 is a CPU build;
# Linux has only CUDA builds of 2.14.1 and 2.15.0 (about 5.5 GB an environment), which run on a CPU.
# transformers builds the real models the tests and benchmarks run (from configs, no downloads).
# tlparse (and Debian's chromium, above) read the exports and the HTML report in their tests.
# redis is the client of the fleet store; its tests start Debian's redis-server (above).
# IREE (an MLIR-based deployment compiler and its CPU runtime) compiles and runs the lowered graphs
# (replay-inspect mlir --target iree, lower-check --runtime iree); optional for the package.
PY_PACKAGES  := torch==$(TORCH) numpy pytest pytest-timeout pytest-xdist scikit-build-core pybind11 cmake ninja \
                transformers==5.23.0 tlparse==0.4.3 redis==8.1.0 expecttest \
                iree-base-compiler==3.13.0 iree-base-runtime==3.13.0
PIP          := PIP_CONSTRAINT=$(CURDIR)/$(VENV)/torch-pin.txt $(PY) -m pip install -q --disable-pip-version-check
# torch-mlir checks the torch-dialect form (tests/python/test_torch_mlir.py). --no-deps: nothing
# may touch the pinned torch; what it needs besides (numpy, packaging) is installed above.
TORCH_MLIR   := torch-mlir==20261001

CXX_SOURCES := CMakeLists.txt pyproject.toml $(shell find cmake store capture replay tools python tests/fuzz \
                 \( -name '*.cc' -o -name '*.h' -o -name '*.def' -o -name 'CMakeLists.txt' -o -name '*.cmake' -o -name '*.py' -o -name '*.json' -o -name '*.check' \) 2>/dev/null)
# The editable install maps each Python module to its file when it is installed: a module added,
# moved or removed (a folder's time changes) installs again.
PY_FOLDERS := $(shell find python/dynamo_replay -type d -not -name __pycache__)

.PHONY: help demo test test-cpp test-python test-slow test-all test-releases other-releases default-release prepare fuzz bench lint format system-packages clean

help:
	@echo "make demo   install what is missing, capture a GPT job, replay it in a fresh process, inspect the store, run a stored graph"
	@echo "make test   install what is missing, run the fast tier: C++ tests (ctest) and pytest without the slow tests"
	@echo "            TORCH=2.13.0|2.14.1|2.15.0 picks the PyTorch release (default $(TORCH)); TESTS=... narrows pytest"
	@echo "make test-slow       the tests marked slow (second examples and long end-to-end jobs)"
	@echo "make test-releases   the release tests (capture, replay, guards, signing, ranks) on the other releases"
	@echo "make test-all        what CI runs: test, test-releases, test-slow"
	@echo "make lint   check the formatting (clang-format-19, ruff); make format applies it"
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
	echo "torch==$(TORCH)" > $(VENV)/torch-pin.txt
	$(PIP) $(PY_PACKAGES)
	$(PIP) --no-deps $(TORCH_MLIR)
	touch $@

# The package, its C++ core and the C++ tests, built by scikit-build-core in $(BUILD).
$(VENV)/.built: $(VENV)/.deps $(CXX_SOURCES) $(PY_FOLDERS) | system-packages
	CMAKE_CXX_COMPILER_LAUNCHER=ccache $(PIP) --no-build-isolation -Cbuild-dir=$(BUILD) \
	  -Ccmake.define.DYNREP_BUILD_TESTS=ON -e .
	touch $@

demo: system-packages $(VENV)/.built
	$(PY) examples/demo.py

# make test is the fast tier: every behaviour at least once, under 10 minutes on 2 cores. The
# tests marked slow (a second example of a behaviour the fast tier covers, or a long job of many
# processes) are CI's addition: make test-all. Both suites run even when the first fails, and
# the target fails if either did. TESTS narrows pytest (files or -k options); MARKS picks the
# tier (MARKS= runs every test of the files named).
TESTS ?=
MARKS ?= not slow
# pytest-xdist: a worker per core (at most 4), each taking whole files, so a file's module
# fixtures (a capture shared by its tests) are made once. WORKERS=0 runs in one process.
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
test: system-packages $(VENV)/.built
	@status=0; \
	$(MAKE) --no-print-directory test-cpp || status=1; \
	$(MAKE) --no-print-directory test-python || status=1; \
	exit $$status

test-cpp:
	$(VENV)/bin/ctest --test-dir $(BUILD) --output-on-failure

test-python:
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder $(if $(MARKS),-m "$(MARKS)") $(TESTS)

test-slow: system-packages $(VENV)/.built
	@$(MAKE) --no-print-directory test-python MARKS=slow

# What CI runs (.ci/run does the same, step by step, with each step's time).
test-all:
	@status=0; \
	$(MAKE) --no-print-directory test || status=1; \
	$(MAKE) --no-print-directory test-releases || status=1; \
	$(MAKE) --no-print-directory test-slow || status=1; \
	exit $$status

# What every release must keep: capture, replay and its refusals, guards, signing, PyTorch's
# touchpoints, the release matrix itself, training steps (the optimizer's step replayed), a job
# of many ranks (the rank agreement, torchrun's ranks replaying DDP's split graph and the
# optimizer's step from one store, and deciding together when one refuses), value descriptions
# (FSDP2's state reads each release's layout) and a store of several generations (an update's
# packages merged into the capture's). The fast tier of these files, and the slow tests that
# show where a release differs (EVERY_RELEASE in tests/python/tiers.py). Without the slowest
# rows (torchrun's second way to turn replay on, check's predictions), which the default
# release runs, so that CI's three releases fit its time.
RELEASE_TESTS := tests/python/test_capture.py tests/python/test_replay.py tests/python/test_replay_changes.py \
                 tests/python/test_replay_refusals.py \
                 tests/python/test_guard_table.py tests/python/test_signed_replay.py \
                 tests/python/test_torch_touchpoints.py tests/python/test_private_touchpoints.py \
                 tests/python/test_releases.py tests/python/test_ranks.py tests/python/test_torchrun.py \
                 tests/python/test_store_growth.py tests/python/test_store_lifecycle.py \
                 tests/python/test_library_closures.py tests/python/test_training.py \
                 tests/python/test_descriptions.py tests/python/test_deferred_compiler.py tests/python/test_miss_explained.py \
                 tests/python/test_miss_table.py \
                 -k 'not (every_rank_replays_the_one_store and DYNAMO_REPLAY) and not check_predicts'
RELEASE_MARKS := not slow or every_release
RELEASES ?= $(filter-out $(TORCH),$(SUPPORTED_TORCH))
other-releases:
	@echo $(RELEASES)
default-release:
	@echo $(TORCH)

# The release's environment alone (torch and the Python packages; no Debian packages, no build).
prepare: $(VENV)/.deps

test-releases:
	@status=0; \
	for release in $(RELEASES); do \
	  $(MAKE) --no-print-directory test TORCH=$$release TESTS="$(RELEASE_TESTS)" MARKS="$(RELEASE_MARKS)" || status=1; \
	done; \
	exit $$status

# Formatting is the tools' job (STYLE.md): .clang-format and pyproject's [tool.ruff]. Every
# tracked or new .cc/.h file (the X-macro .def, FileCheck inputs and tests/data are not C++
# sources to format). Ruff has an environment of its own: checking needs no torch.
CLANG_FORMAT := clang-format-19
FORMAT_CXX    = $(wildcard $(shell git ls-files --cached --others --exclude-standard -- '*.cc' '*.h'))
RUFF_VERSION := 0.17.6
RUFF         := .venv-lint/bin/ruff

$(RUFF):
	python3 -m venv .venv-lint
	.venv-lint/bin/python -m pip install -q --disable-pip-version-check ruff==$(RUFF_VERSION)

lint: system-packages $(RUFF)
	@status=0; \
	$(CLANG_FORMAT) --dry-run -Werror $(FORMAT_CXX) || status=1; \
	$(RUFF) check . || status=1; \
	$(RUFF) format --check . || status=1; \
	exit $$status

format: system-packages $(RUFF)
	$(RUFF) check --fix --exit-zero .  # what needs a person is left to make lint
	$(RUFF) format .
	$(CLANG_FORMAT) -i $(FORMAT_CXX)

bench: system-packages $(VENV)/.built
	$(PY) benchmarks/store_bench.py

clean:
	rm -rf build .venv-*/.built
