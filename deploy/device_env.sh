# Prepares a GPU machine that has no Debian packages of ours (Ubuntu 24.04) to run a build made
# elsewhere, in the current shell: `source deploy/device_env.sh` from the repository root, then
# any kgym command or benchmark, e.g.
#   source deploy/device_env.sh && python3 bench/kernelbench_sweep.py --kernelbench .debs/kernelbench --level 2 --stride 4 --baseline
# Needs what deploy/device_bundle.sh made here: .debs/build, .debs/root, .debs/wheels (and
# .debs/wheels-report where a report is drawn), carried to that machine. deploy/gpu_suite.sh
# sources it first.
export LD_LIBRARY_PATH="$PWD/.debs/root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
# A build carried in the bundle becomes build/ here. A machine still warm from an earlier call
# keeps that call's build/: a newer bundle replaces it.
if [ -x .debs/build/kgym ] && { [ ! -x build/kgym ] || [ .debs/build/kgym -nt build/kgym ]; }; then
  mkdir -p build && cp -a .debs/build/. build/
fi
# CTest files name the source tree of the build; make that path lead here.
kgym_built_in=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [ "$kgym_built_in" != "$PWD" ] && [ ! -e "$kgym_built_in" ]; then
  mkdir -p "$(dirname "$kgym_built_in")" && ln -s "$PWD" "$kgym_built_in"
fi
unset kgym_built_in
# pyzmq for the API client (bench/, tests), ninja for candidates' CUDA extensions, protobuf for the
# sandbox's frames, nvidia-ml-py for NVML (deploy/requirements-*.txt); the bundle carries them.
python3 -c "import zmq" 2>/dev/null || python3 -m pip install -q --no-index --find-links .debs/wheels pyzmq
python3 -c "import ninja" 2>/dev/null || python3 -m pip install -q --no-index --find-links .debs/wheels ninja
python3 -c "import google.protobuf" 2>/dev/null || python3 -m pip install -q --no-index --find-links .debs/wheels protobuf
# NVML per process: who holds the GPU's memory (device_memory.py, bench/memory_by_process.py).
python3 -c "import pynvml" 2>/dev/null || python3 -m pip install -q --no-index --find-links .debs/wheels nvidia-ml-py
# matplotlib draws kgym report's and kgym eval's charts (report/plot_curves.py).
python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install -q --no-index --find-links .debs/wheels-report \
  matplotlib 2>/dev/null || python3 -m pip install -q --no-index --find-links .debs/wheels-report \
  --break-system-packages matplotlib 2>/dev/null || echo "no matplotlib here: kgym report will say so"
export KGYM_PLOT_PYTHON="${KGYM_PLOT_PYTHON:-$(command -v python3)}"
