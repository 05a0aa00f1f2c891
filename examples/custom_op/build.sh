#!/bin/sh
# Builds zero_out.so beside this script with the flags the installed Flowstone gives.
set -e
PYTHON=${PYTHON:-python}
cd "$(dirname "$0")"
${CXX:-g++} -std=c++20 -shared -fPIC -O2 zero_out.cc -o zero_out.so \
  $($PYTHON -c "import flowstone as tf; print(' '.join(tf.sysconfig.get_compile_flags()))") \
  $($PYTHON -c "import flowstone as tf; print(' '.join(tf.sysconfig.get_link_flags()))")
