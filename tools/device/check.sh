#!/usr/bin/env bash
# Runs the test suite on a lent GPU machine from the bundle that tools/device/bundle.sh made
# (.device/, carried with the call): the C++ tests, then every Python test with the GPU visible.
# The machine has no compilers' dependencies and no network, so nothing is built or installed
# here. Logs and a JUnit report go to $OUT (the device tool brings them back).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
cd "$root"
[ -f .device/bundle.tar.xz ] && tar -xJf .device/bundle.tar.xz -C .device
mkdir -p build && rm -rf build/device && mv .device/build/device build/device
export LD_LIBRARY_PATH="$root/.device/lib:$root/.device/site/flowstone${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$root/.device/site"
export PYTHONUNBUFFERED=1
# cuBLAS, cuDNN and NCCL come from NVIDIA's wheels in the image's Python; discovery also looks
# beside the flowstone package, which here is the bundle, so name them.
nvidia_libs=$(python3 -c 'import glob, os, nvidia; print(":".join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib")))))' 2>/dev/null)
export FLOWSTONE_CUDA_LIBRARY_PATH="$nvidia_libs"
{
  nvidia-smi -L
  python3 --version
  python3 -c 'import flowstone as tf; print("GPUs:", tf.config.list_physical_devices("GPU"))'
  python3 -m flowstone doctor
} 2>&1 | tee "$out/doctor.log"
# Native backtraces of tests named in GDB_TESTS (pytest node ids), under cuda-gdb (no gdb there).
for test_id in ${GDB_TESTS:-}; do
  (cd tests && timeout 120 cuda-gdb -batch -ex run -ex bt -ex "info threads" --args python3 -m pytest -q \
    -p no:cacheprovider -p no:faulthandler "$test_id") >"$out/gdb.log" 2>&1
  grep -E "^#|signal|SIG" "$out/gdb.log" | head -n 40
done
cpp_failed=0
for test in .device/bin/*; do
  name=$(basename "$test")
  # The C++ tests are the CPU's (cancellation tests need a long CPU computation).
  if ! CUDA_VISIBLE_DEVICES= timeout 300 "$test" --gtest_brief=1 >"$out/cpp-$name.log" 2>&1; then
    cpp_failed=1
    echo "C++ FAILED: $name"; tail -n 30 "$out/cpp-$name.log"
  fi
done
# Workers in parallel, each growing its GPU memory as needed; a crashed worker is restarted and
# its test reported as failed.
export TF_FORCE_GPU_ALLOW_GROWTH=true
(cd tests && timeout ${PYTEST_TIME_LIMIT:-420} python3 -m pytest -q -p no:cacheprovider \
  -n "${PYTEST_WORKERS:-6}" --max-worker-restart 50 --timeout 120 --junitxml "$out/junit.xml" -rfE ${PYTEST_ARGS:-python seeds gpu}) \
  >"$out/pytest.log" 2>&1
py_rc=$?
grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest.log" | tail -n 60
echo "cpp_failed=$cpp_failed pytest_rc=$py_rc"
