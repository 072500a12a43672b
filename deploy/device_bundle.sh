#!/usr/bin/env bash
# Prepares what the GPU machine (Ubuntu 24.04, no Debian packages of ours) needs to run a
# build made here: the runtime libraries from Debian's packages, unpacked under .debs/root.
# Carry .debs/build, .debs/root and .debs/wheels to the GPU machine (and .debs/wheels-report
# where a report is drawn), then run deploy/gpu_suite.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .debs && cd .debs
apt-get download -qq libcaf-core0.17 libcaf-io0.17 libcaf-openssl0.17 libfmt9 libprotobuf32 libspdlog1.10 libzmq5 libsodium23 libnorm1 libpgm-5.3-0 libsimdjson14 libcpp-httplib0.11 libbrotli1 libtcmalloc-minimal4 2>/dev/null
rm -rf root && for f in *.deb; do dpkg -x "$f" root; done
du -sh root
# The build, slimmed to what runs: binaries without debug info and the CTest files.
cd ..
rm -rf .debs/build && mkdir -p .debs/build/tests
cp build/CMakeCache.txt build/CTestTestfile.cmake .debs/build/
cp build/tests/CTestTestfile.cmake .debs/build/tests/
strip --strip-debug -o .debs/build/kgym build/kgym
[ -f build/libkgym_cupti.so ] && strip --strip-debug -o .debs/build/libkgym_cupti.so build/libkgym_cupti.so
strip --strip-debug -o .debs/build/libkgym_trace.so build/libkgym_trace.so
[ -f build/libkgym_checks.so ] && strip --strip-debug -o .debs/build/libkgym_checks.so build/libkgym_checks.so
strip --strip-debug -o .debs/build/control_plane_bench build/control_plane_bench
mkdir -p .debs/build/python && cp build/python/kgym_pb2.py .debs/build/python/  # the schema for the sandbox
for t in build/tests/*_test; do strip --strip-debug -o ".debs/build/tests/$(basename "$t")" "$t"; done
du -sh .debs/build
# The API client's one dependency, for the GPU machine's Python 3.12 (it has no internet).
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
  -d .debs/wheels -r deploy/requirements-client.txt
# ninja, for building candidates' CUDA extensions, protobuf, for the sandbox's frames, and
# nvidia-ml-py, for the GPU's memory per process (the GPU machine's image may lack them).
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux_2_17_x86_64 \
  -d .debs/wheels "$(grep '^ninja==' deploy/requirements-sandbox.txt)" "$(grep '^protobuf==' deploy/requirements-sandbox.txt)" \
  "$(grep '^nvidia-ml-py==' deploy/requirements-sandbox.txt)"
# matplotlib, for kgym report's and kgym eval's charts (report/plot_curves.py), in a folder of
# its own: a device call carries at most 64 MiB, so carry .debs/build, .debs/root and
# .debs/wheels for the tests, and add .debs/wheels-report (25 MiB) only where a report is drawn.
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .debs/wheels-report matplotlib
# Never numpy from here: the sandbox's pinned one (requirements-sandbox.txt) stays.
rm -f .debs/wheels-report/numpy-*.whl
rm -f .debs/*.deb  # unpacked under .debs/root
