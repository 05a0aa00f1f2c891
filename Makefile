# Flowstone: `make demo` and `make test` bootstrap everything on a fresh machine.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
BUILD := build/release
JOBS ?= $(shell nproc)
# Real TensorFlow and PyTorch are peers for benchmarks only, in their own venv.
PEERS := .venv-peers

.PHONY: all demo test bench bootstrap install cpp-test py-test tsan asan format clean

all: install

# System packages: GoogleTest for the C++ tests, ccache to speed up rebuilds.
$(BUILD)/.system-deps:
	@mkdir -p $(BUILD)
	@if ! dpkg -s libgtest-dev >/dev/null 2>&1; then \
	  echo "installing libgtest-dev (Debian)"; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libgtest-dev ccache) >/dev/null; \
	fi
	@touch $@

$(VENV)/.deps: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements-dev.txt
	@touch $@

bootstrap: $(BUILD)/.system-deps $(VENV)/.deps

# Builds the core, the extension, the C++ tests and examples in one CMake tree and installs the
# package into .venv (incrementally: the build tree is kept in $(BUILD)).
install: bootstrap
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(VPY) -m pip install -q --no-build-isolation \
	  -Cbuild-dir=$(BUILD) -Ccmake.define.FLOWSTONE_BUILD_TESTS=ON \
	  -Ccmake.define.CMAKE_PREFIX_PATH=$(CURDIR)/$(VENV) .

cpp-test: install
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

py-test: install
	cd tests && ../$(VPY) -m pytest -q -p no:cacheprovider python seeds gpu

test: cpp-test py-test

demo: install
	$(VPY) examples/demo.py

bench: install
	@if [ ! -x $(PEERS)/bin/python ]; then \
	  $(PYTHON) -m venv $(PEERS) && $(PEERS)/bin/pip install -q tensorflow-cpu torch==2.13.0 numpy || \
	  echo "TensorFlow/PyTorch could not be installed; benchmarking Flowstone alone"; \
	fi
	$(VPY) bench/bench_session.py --peer-python $(PEERS)/bin/python
	$(VPY) bench/bench_training.py --peer-python $(PEERS)/bin/python
	$(VPY) bench/bench_control_flow.py --peer-python $(PEERS)/bin/python

# Concurrency under ThreadSanitizer: the C++ tests (many threads on one session) in their own tree.
tsan: $(BUILD)/.system-deps $(VENV)/.deps
	cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFLOWSTONE_SANITIZE=thread -DFLOWSTONE_BUILD_PYTHON=OFF -DFLOWSTONE_BUILD_TESTS=ON \
	  -DCMAKE_PREFIX_PATH=$(CURDIR)/$(VENV) \
	  -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(VENV)/bin/ninja
	cmake --build build/tsan -j$(JOBS)
	TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build/tsan --output-on-failure

asan: $(BUILD)/.system-deps $(VENV)/.deps
	cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFLOWSTONE_SANITIZE=address -DFLOWSTONE_BUILD_PYTHON=OFF -DFLOWSTONE_BUILD_TESTS=ON \
	  -DCMAKE_PREFIX_PATH=$(CURDIR)/$(VENV) \
	  -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(VENV)/bin/ninja
	cmake --build build/asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build/asan --output-on-failure

format: $(VENV)/.deps
	$(VENV)/bin/clang-format -i $$(git ls-files "*.h" "*.cc" "*.cu")

clean:
	rm -rf build
