# Flowstone: `make demo` and `make test` bootstrap everything on a fresh machine.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
BUILD := build/release
JOBS ?= $(shell nproc)
# Real TensorFlow and PyTorch are peers for benchmarks only, in their own venv.
PEERS := .venv-peers
# ONNX Runtime and tf2onnx for the model zoo benchmark: a venv that sees the peers' TensorFlow
# through a .pth file (installed without dependencies, so that the peers' versions stay).
ONNX_VENV := build/onnx-venv

.PHONY: all demo test bench bootstrap install cpp-test py-test tsan tsan-build asan asan-configure asan-python \
	stress fuzz format clean

all: install

# System packages (Debian bookworm), pinned where the version decides results or ABI:
# - GoogleTest for the C++ tests, ccache to speed up rebuilds;
# - protobuf 3.21 (the library and protoc) for TensorFlow's formats (CMake checks its version);
# - zlib for the compressed files of tf.data;
# - RE2 for the regex string ops (pinned);
# - libjpeg-turbo and giflib for the image codecs (pinned: a decoder's version decides decoded
#   bits), libpng (unpinned: bookworm ships it from the security archive, whose older builds go
#   away; PNG is lossless, so its version changes no pixel);
# - KISS FFT for tf.signal's transforms (pinned). KISS FFT rather than FFTW: its C++ header is a
#   template over float and double (complex64 and complex128 alike), BSD-licensed (FFTW is GPL,
#   this project Apache-2.0), and the algorithm TensorFlow's own CPU kernels use through Eigen;
#   bookworm has no pocketfft package;
# - Open MPI (pinned) for flowstone.horovod's MPI plugin and the multi-process tests' mpirun;
# - ICU (pinned) for tf.strings.unicode_script's script codes.
PROTOBUF_VERSION := 3.21
RE2_VERSION := 20220601+dfsg-1+b1
KISSFFT_VERSION := 131.1.0-4.1~deb12u1
OPENMPI_VERSION := 4.1.4-3+b1
LIBJPEG_TURBO_VERSION := 1:2.1.5-2
GIFLIB_VERSION := 5.2.1-2.5+deb12u1
ICU_VERSION := 72.1-3+deb12u1
# Re-checked when this Makefile changes, so a newly listed package gets installed.
$(BUILD)/.system-deps: Makefile
	@mkdir -p $(BUILD)
	@if ! dpkg -s libgtest-dev libprotobuf-dev protobuf-compiler zlib1g-dev libre2-dev \
	    libjpeg62-turbo-dev libpng-dev libgif-dev libkissfft-dev libopenmpi-dev openmpi-bin libicu-dev >/dev/null 2>&1; then \
	  echo "installing libgtest-dev, protobuf, zlib1g-dev, libre2-dev, libjpeg, libpng, giflib, kissfft, Open MPI and ICU (Debian)"; \
	  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libgtest-dev \
	    ccache libprotobuf-dev protobuf-compiler zlib1g-dev libre2-dev=$(RE2_VERSION) \
	    libjpeg62-turbo-dev=$(LIBJPEG_TURBO_VERSION) libpng-dev libgif-dev=$(GIFLIB_VERSION) libkissfft-dev=$(KISSFFT_VERSION) \
	    libopenmpi-dev=$(OPENMPI_VERSION) openmpi-bin=$(OPENMPI_VERSION) libicu-dev=$(ICU_VERSION)) >/dev/null; \
	fi
	@protoc --version | grep -q "libprotoc $(PROTOBUF_VERSION)\." || \
	  { echo "protoc $(PROTOBUF_VERSION).x is required, found: $$(protoc --version)"; exit 1; }
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
	$(VPY) bench/bench_graph_optimizer.py --peer-python $(PEERS)/bin/python
	$(VPY) bench/bench_lstm.py --peer-python $(PEERS)/bin/python
	$(VPY) bench/bench_image_pipeline.py --peer-python $(PEERS)/bin/python
	$(VPY) bench/bench_distributed.py
	@if [ -x $(PEERS)/bin/python ] && [ ! -x $(ONNX_VENV)/bin/python ]; then \
	  $(PEERS)/bin/python -m venv $(ONNX_VENV) && \
	  $(PEERS)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > \
	    "$$($(ONNX_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/peers.pth" && \
	  $(ONNX_VENV)/bin/pip install -q --no-deps tf2onnx onnx onnxruntime || \
	  echo "tf2onnx/onnxruntime could not be installed; the model zoo runs without ONNX Runtime"; \
	fi
	$(VPY) bench/bench_model_zoo.py --peer-python $(PEERS)/bin/python --onnx-python $(ONNX_VENV)/bin/python

# Concurrency under ThreadSanitizer: the C++ tests (many threads on one session) in their own tree.
tsan-build: $(BUILD)/.system-deps $(VENV)/.deps
	cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFLOWSTONE_SANITIZE=thread -DFLOWSTONE_BUILD_PYTHON=OFF -DFLOWSTONE_BUILD_TESTS=ON \
	  -DCMAKE_PREFIX_PATH=$(CURDIR)/$(VENV) \
	  -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(VENV)/bin/ninja
	cmake --build build/tsan -j$(JOBS)

tsan: tsan-build
	TSAN_OPTIONS=halt_on_error=1:suppressions=$(CURDIR)/tests/tsan_suppressions.txt \
	  ctest --test-dir build/tsan --output-on-failure

# AddressSanitizer + UBSan: one tree (build/asan) for the C++ tests and for the extension that
# `make fuzz` loads (see asan-python).
asan-configure: $(BUILD)/.system-deps $(VENV)/.deps
	cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DFLOWSTONE_SANITIZE=address -DFLOWSTONE_BUILD_PYTHON=ON -DFLOWSTONE_BUILD_TESTS=ON \
	  -DPython_EXECUTABLE=$(CURDIR)/$(VPY) -DCMAKE_PREFIX_PATH=$(CURDIR)/$(VENV) \
	  -DCMAKE_MAKE_PROGRAM=$(CURDIR)/$(VENV)/bin/ninja

asan: asan-configure
	cmake --build build/asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build/asan --output-on-failure

# The extension and core under AddressSanitizer + UBSan, as a package in $(ASAN_SITE) that the
# ordinary interpreter loads with the ASan runtime preloaded (ASAN_RUN below).
ASAN_SITE := build/asan/site
# libstdc++ is preloaded too: python itself does not link it, and ASan's __cxa_throw interceptor
# aborts on the first C++ exception if libstdc++ was not loaded when the runtime started.
ASAN_RUN := LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so.6)" \
  ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=$(CURDIR)/$(ASAN_SITE)
asan-python: asan-configure
	cmake --build build/asan -j$(JOBS) --target _C
	rm -rf $(ASAN_SITE) && mkdir -p $(ASAN_SITE)
	cp -r python/flowstone $(ASAN_SITE)/
	cp build/asan/_C*.so build/asan/libflowstone.so build/asan/generated/_build_config.py \
	  build/asan/generated/tf_protos.desc $(ASAN_SITE)/flowstone/

# Kernel fuzzing over the whole op registry under ASan + UBSan (tests/fuzz/fuzz_ops.py):
# FUZZ_CALLS adversarial calls per op; a crash, sanitizer report or huge allocation fails it.
# Per-op totals accumulate in FUZZ_COUNTS over runs; FUZZ_BELOW=N fuzzes only the ops with fewer
# than N calls there, so that full coverage can be reached in several (interruptible) runs:
#   make fuzz FUZZ_CALLS=250 FUZZ_BELOW=1000
# Then mutated GraphDefs (imported and run once) and V2 checkpoints (read), FUZZ_FORMAT_ITERATIONS
# of them (tests/fuzz/fuzz_formats.py).
FUZZ_CALLS ?= 1000
FUZZ_COUNTS ?= build/asan/fuzz-counts.json
FUZZ_BELOW ?=
FUZZ_FORMAT_ITERATIONS ?= 2000
fuzz: asan-python
	$(ASAN_RUN) $(VPY) tests/fuzz/fuzz_ops.py --calls $(FUZZ_CALLS) --jobs $(JOBS) \
	  --report build/asan/fuzz-report.json --counts $(FUZZ_COUNTS) \
	  $(if $(FUZZ_BELOW),--below $(FUZZ_BELOW))
	$(ASAN_RUN) ASAN_OPTIONS=detect_leaks=0:max_allocation_size_mb=2048:allocator_may_return_null=0 \
	  $(VPY) tests/fuzz/fuzz_formats.py --iterations $(FUZZ_FORMAT_ITERATIONS) \
	  --report build/asan/fuzz-formats-report.json

# Concurrency scenarios, long leak tests and the C++ concurrency tests, under load and under
# ThreadSanitizer (tests/stress/run_stress.py; about 10 minutes on 2 cores).
STRESS_ITERATIONS ?= 10000
stress: install tsan-build
	$(VPY) tests/stress/run_stress.py --iterations $(STRESS_ITERATIONS) \
	  --cpp-tests $(BUILD)/tests/cpp/flowstone_tests --tsan-tests build/tsan/tests/cpp/flowstone_tests \
	  --report build/stress-report.json

format: $(VENV)/.deps
	$(VENV)/bin/clang-format -i $$(git ls-files "*.h" "*.cc" "*.cu")

clean:
	rm -rf build
