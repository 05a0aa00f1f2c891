#!/usr/bin/env bash
# Packs the installed package, the C++ test binaries and the shared libraries they need outside
# the C library into .device/bundle.tar.xz, for tools/device/check.sh on a lent GPU machine.
# That machine has CUDA, a Python with numpy, pytest and NVIDIA's wheels, but none of our Debian
# build dependencies and no network. Build first with the device's Python minor version
# (make PYTHON=python3.12 install): the extension is built for one CPython ABI.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${VENV:-$root/.venv}
build=${BUILD:-$root/build/release}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/site" "$stage/lib" "$stage/bin"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cp -r "$site/flowstone" "$stage/site/"
# The pinned LAPACK (found beside the package, as installed) and protobuf's Python runtime at our
# pinned version, which the device image's older one is not.
cp -r "$site/scipy_openblas32" "$site/google" "$stage/site/"
find "$stage/site" -name __pycache__ -prune -exec rm -rf {} +
for test in "$build"/tests/cpp/flowstone_tests "$build"/src/cuda/flowstone_cuda_tests; do
  [ -x "$test" ] && cp "$test" "$stage/bin/"
done
# The fake GPU plugin and stand-in driver, where the tests look for them (build/<tree>/tests/...).
mkdir -p "$stage/build/device/tests"
cp -r "$build/tests/fake_gpu" "$stage/build/device/tests/"
find "$stage/build" -name CMakeFiles -prune -exec rm -rf {} +
# Every shared library these load that is not part of the C/C++ runtime, which the device has.
objects=$(find "$stage" -name '*.so*' -o -path '*/bin/*' -type f)
for object in $objects; do
  ldd "$object" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    libflowstone*|_C*|libscipy_openblas*) ;;
    libcuda.so*|libcudart.so*) ;;  # the device's own CUDA
    *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
mkdir -p "$root/.device"
tar -cJf "$root/.device/bundle.tar.xz" -C "$stage" site lib bin build
du -h "$root/.device/bundle.tar.xz"
