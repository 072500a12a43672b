#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for kgym and builds it:
#   Debian packages (CAF 0.17, Protobuf, ZeroMQ, spdlog, GoogleTest), the sandbox's Python
#   stack from PyPI (PyTorch, Triton), the reference trainer's environment (.venv-trainer),
#   then the CMake build in build/.
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

DEBS="cmake g++ make libcaf-dev libprotobuf-dev protobuf-compiler libzmq3-dev cppzmq-dev libspdlog-dev zlib1g-dev
      libgtest-dev libsqlite3-dev libsimdjson-dev libssl-dev openssl libcpp-httplib-dev libcli11-dev libgoogle-perftools-dev pkg-config python3-matplotlib libjs-dygraphs
      chromium chromium-driver"
if ! dpkg -s $DEBS >/dev/null 2>&1; then
  echo "kgym setup: installing Debian packages"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $DEBS >/dev/null
fi

PYTHON=${KGYM_PYTHON:-python3}
if ! "$PYTHON" - <<'PY' 2>/dev/null
import re, sys, importlib.metadata as md
text = "".join(open("deploy/requirements-" + name + ".txt").read() for name in ("sandbox", "client", "browser-test"))
want = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, re.M))
sys.exit(any(md.version(name) != version for name, version in want.items()))
PY
then
  echo "kgym setup: installing the sandbox's Python packages into $PYTHON (this takes a minute)"
  "$PYTHON" -m pip install -q --disable-pip-version-check -r deploy/requirements-sandbox.txt \
    -r deploy/requirements-client.txt -r deploy/requirements-browser-test.txt
fi

# The reference trainer and model server (deploy/trainer/): torch from Debian (CPU), transformers
# and pyzmq from PyPI, in .venv-trainer (it sees Debian's python3-torch). OpenBLAS (its OpenMP
# build keeps to torch's thread count) becomes libblas.so.3: without it Debian's torch does its
# matrix products with the reference BLAS, ten times slower (a 1600-token score 0.70 s against
# 0.07 s on 2 cores; llm_train_test 144 s against 41 s).
TRAINER_DEBS="python3-torch python3-venv libopenblas0-openmp"
if ! dpkg -s $TRAINER_DEBS >/dev/null 2>&1; then
  echo "kgym setup: installing Debian's python3-torch for the reference trainer"
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $TRAINER_DEBS >/dev/null
fi
if ! .venv-trainer/bin/python -c "import torch, transformers, zmq" 2>/dev/null; then
  echo "kgym setup: making .venv-trainer (transformers, pyzmq)"
  /usr/bin/python3 -m venv --system-site-packages .venv-trainer
  .venv-trainer/bin/pip install -q --disable-pip-version-check -r deploy/trainer/requirements.txt
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
echo "kgym setup: built build/kgym"
