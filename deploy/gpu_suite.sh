#!/usr/bin/env bash
# Runs the GPU test suite, a short `kgym train --device cuda`, an LLM policy end to end (a
# tiny random-weight model served and trained on the GPU by deploy/trainer, `kgym train
# --policy openai`, `kgym eval` of the embedded policy and of the served model) and the GPU
# benchmark in one call, on a machine with a GPU, then the control-plane benchmarks
# (KGYM_SKIP_TESTS, _TRAIN, _LLM, _DISPATCH, _BENCH=1 leave one out). The GPU tests take
# about 10 minutes on an H100; KGYM_TEST_SHARD=I/N runs the I-th of N shards of every
# GoogleTest binary (GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS), for machines lent by the call;
# KGYM_TEST_FILTER=PATTERN runs only the matching cases of the GPU binaries (a GoogleTest
# filter; ctest's own filters would override GTEST_FILTER), KGYM_TEST_REPEAT=N each N times,
# and with KGYM_TEST_UNPRIVILEGED=1 the matching hostile cases again as kgym-unprivileged
# (tests/unprivileged/run_as_user.sh; lines prefixed "2: " in ctest-gpu.log).
# KGYM_TEST_GPUS=N (N > 1, a host with N GPUs) runs the GPU tests on all N at once (4 H100s,
# 2026-11-27: 458 s): the GPU list in N-1 shards and the unprivileged list on the last GPU, or,
# with KGYM_TEST_LISTS=gpu or =unprivileged, only that list in N shards (2 GPUs: two calls).
# Built elsewhere: carry .debs/build, .debs/root, .debs/wheels (+ .debs/wheels-report for the
# train and LLM parts; deploy/device_bundle.sh makes them) and run this there.
set -uo pipefail
cd "$(dirname "$0")/.."
# The bundle's libraries, build and Python packages (also for running benchmarks by hand).
source deploy/device_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
out=${OUT:-/tmp/kgym-gpu-suite}
mkdir -p "$out"
status=0
if [ "${KGYM_SKIP_TESTS:-0}" != 1 ]; then
  if [ -n "${KGYM_TEST_SHARD:-}" ]; then
    export GTEST_SHARD_INDEX="${KGYM_TEST_SHARD%/*}" GTEST_TOTAL_SHARDS="${KGYM_TEST_SHARD#*/}"
  fi
  export KGYM_TRACE_ARCHIVE="$out/traces"  # CUPTI traces of the profile and hostile tests (test data; bench/batch_share_parts.py)
  mkdir -p "$KGYM_TRACE_ARCHIVE"
  if [ -n "${KGYM_TEST_FILTER:-}" ]; then
    for t in hostile_test profile_test; do
      KGYM_TEST_DEVICE=cuda "build/tests/$t" --gtest_filter="$KGYM_TEST_FILTER" \
        --gtest_repeat="${KGYM_TEST_REPEAT:-1}" > "$out/filtered.log" 2>&1 || status=1
      sed 's/^/1: /' "$out/filtered.log" >> "$out/ctest-gpu.log"  # the prefix ctest -V gives
    done
    if [ "${KGYM_TEST_UNPRIVILEGED:-0}" = 1 ]; then
      KGYM_TEST_DEVICE=cuda tests/unprivileged/run_as_user.sh "$PWD/build/tests/hostile_test" \
        --gtest_filter="$KGYM_TEST_FILTER" --gtest_repeat="${KGYM_TEST_REPEAT:-1}" > "$out/filtered.log" 2>&1 || status=1
      sed 's/^/2: /' "$out/filtered.log" >> "$out/ctest-gpu.log"
    fi
    rm -f "$out/filtered.log"
    if [ $status = 0 ]; then  # a skipped case is no failure, but it did not pass either: say so
      skipped=$(grep -c '^[12]: \[  SKIPPED \] .*(' "$out/ctest-gpu.log")
      echo "100% tests passed (filtered: $KGYM_TEST_FILTER)$([ "$skipped" != 0 ] && echo "; $skipped skipped, not run")" \
        >> "$out/ctest-gpu.log"
    fi
  elif [ "${KGYM_TEST_GPUS:-1}" -gt 1 ]; then
    # N GPUs of one host: the GPU list in N-1 shards side by side, each on a GPU and timing
    # cores of its own (the last cores of the host, three a GPU), the unprivileged list whole
    # on the last GPU. One log, shard by shard, as ctest -V writes it.
    gpus=$KGYM_TEST_GPUS cores=$(nproc)
    id -u kgym-unprivileged >/dev/null 2>&1 || useradd --system --create-home --shell /usr/sbin/nologin kgym-unprivileged
    # KGYM_TEST_LISTS=gpu or =unprivileged: only that list, in N shards, one a GPU (a host of 2
    # GPUs runs the suite in two calls of the device's 600 s each: gpu, then unprivileged).
    lists=${KGYM_TEST_LISTS:-both}
    for i in $(seq 0 $((gpus - 1))); do
      (
        c=$((cores - 1 - 3 * i))
        # Its GPU first, the next one second: the tests place their executors on the first
        # (as kgym does), and a candidate that reaches for the second must find none.
        export CUDA_VISIBLE_DEVICES="$i,$(((i + 1) % gpus))" KGYM_TIMING_CORES="$c,$((c - 1)),$((c - 1))"
        export KGYM_TRACE_ARCHIVE="$out/traces/gpu$i" && mkdir -p "$KGYM_TRACE_ARCHIVE"
        shard=$i shards=$gpus
        if [ "$lists" = both ]; then  # the last GPU: the unprivileged list whole (one shard)
          shards=$((gpus - 1)) && [ "$i" = "$shards" ] && shard=0 shards=1
        fi
        if [ "$lists" = unprivileged ] || { [ "$lists" = both ] && [ "$i" = $((gpus - 1)) ]; }; then
          which=(-R hostile_test_unprivileged_gpu)
        else
          which=(-L gpu -E hostile_test_unprivileged_gpu)
        fi
        GTEST_SHARD_INDEX=$shard GTEST_TOTAL_SHARDS=$shards ctest --test-dir build "${which[@]}" -V \
          > "$out/ctest-gpu$i.log" 2>&1
        echo "gpu $i: ctest exit $?" >> "$out/ctest-gpu$i.log"
      ) &
    done
    wait
    for i in $(seq 0 $((gpus - 1))); do cat "$out/ctest-gpu$i.log" && rm "$out/ctest-gpu$i.log"; done > "$out/ctest-gpu.log"
    if [ "$(grep -c '100% tests passed' "$out/ctest-gpu.log")" != "$gpus" ]; then
      status=1
    else
      echo "100% tests passed (all $gpus GPUs)" >> "$out/ctest-gpu.log"
    fi
  else
    ctest --test-dir build -L gpu -V 2>&1 > "$out/ctest-gpu.log" || status=1
  fi
  tar -czf "$out/traces.tar.gz" -C "$out" traces && rm -rf "$out/traces"
  grep -E "^[0-9]+: \[ +(OK|FAILED|SKIPPED) +\]|tests passed|tests failed" "$out/ctest-gpu.log"
  grep -q "100% tests passed" "$out/ctest-gpu.log" || status=1
fi
if [ "${KGYM_SKIP_TRAIN:-0}" != 1 ]; then
  # The main job on the GPU: a short kgym train with CUDA and Triton candidates.
  rm -rf "$out/train-run"
  build/kgym train --device cuda --run-dir "$out/train-run" --iterations "${KGYM_TRAIN_ITERATIONS:-8}" \
    --group-size 8 --turns 3 --task gelu_scale_residual --task rmsnorm_rows --task matmul_bias_relu \
    --task softmax_rows --task mse_loss 2>&1 | tee "$out/train.log" || status=1
  build/kgym report "$out/train-run" 2>&1 | tee "$out/train-report.txt" || status=1
  rm -f "$out/train-run/episodes.pb"  # large; the metrics, config, log and plot come back
fi
python3 -c "import zmq" 2>/dev/null || python3 -m pip install -q --no-index --find-links .debs/wheels pyzmq
if [ "${KGYM_SKIP_LLM:-0}" != 1 ]; then
  llm="$out/llm"
  rm -rf "$llm" && mkdir -p "$llm"
  python3 deploy/trainer/make_tiny_model.py "$llm/model" --layers 4 --width 256 | tee "$llm/model.txt"
  python3 deploy/trainer/serve_model.py "$llm/model" --port 0 --port-file "$llm/port" --device cuda \
    > "$llm/server.log" 2>&1 &
  server=$!
  python3 deploy/trainer/reference_trainer.py "$llm/model" --out-dir "$llm/weights" --endpoint 'tcp://127.0.0.1:*' \
    --endpoint-file "$llm/endpoint" --lr 1e-3 --device cuda > "$llm/trainer.log" 2>&1 &
  trainer=$!
  for _ in $(seq 120); do [ -s "$llm/port" ] && [ -s "$llm/endpoint" ] && break; sleep 1; done
  url="http://127.0.0.1:$(cat "$llm/port")/v1"
  echo '{"max_policy_lag": 0, "openai": {"max_tokens": 48, "concurrency": 8}}' > "$llm/config.json"
  build/kgym train --device cuda --config "$llm/config.json" --policy openai --openai-url "$url" \
    --trainer "$(cat "$llm/endpoint")" --run-dir "$llm/train-run" --iterations "${KGYM_LLM_ITERATIONS:-3}" \
    --group-size 4 --turns 2 --task gelu_scale_residual --task rmsnorm_rows --task softmax_rows 2>&1 \
    | tee "$llm/train.log" || status=1
  build/kgym report "$llm/train-run" 2>&1 | tee "$llm/train-report.txt" || status=1
  build/kgym eval --device cuda --turns 3 --out "$llm/eval-embedded" 2>&1 | tee "$llm/eval-embedded.txt" || status=1
  build/kgym eval --device cuda --turns 2 --config "$llm/config.json" --policy openai --openai-url "$url" \
    --out "$llm/eval-served" 2>&1 | tee "$llm/eval-served.txt" || status=1
  kill "$server" "$trainer"
  rm -rf "$llm/weights" "$llm/model" "$llm"/*/episodes.pb
  tar -czf "$out/llm.tar.gz" -C "$out" llm && rm -rf "$llm"  # one file to bring back
fi
if [ "${KGYM_SKIP_DISPATCH:-0}" != 1 ]; then
  # serve + worker processes with null executors: the control plane across processes.
  build/control_plane_bench 2>&1 | tee "$out/control_plane.txt"
  python3 bench/dispatch_bench.py --kgym build/kgym 2>&1 | tee "$out/dispatch.txt" || status=1
fi
if [ "${KGYM_SKIP_BENCH:-0}" != 1 ]; then
  python3 bench/eval_throughput.py --device cuda --kgym build/kgym --out "$out" 2>&1 | tee "$out/bench.log" || status=1
  # The figures behind the judge's delivery and reference-after rules, honest and hostile side by side.
  python3 bench/delivery_excess.py --device cuda --kgym build/kgym --out "$out/delivery_excess.jsonl" 2>&1 | tee "$out/delivery_excess.txt" || status=1
fi
exit $status
