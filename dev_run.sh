#!/usr/bin/env bash
set -u
rm -rf build && cp -r .debs/build build
python3 -m pip install -q --no-index --find-links .debs/wheels pyzmq ninja 2>&1 | tail -1
export LD_LIBRARY_PATH=$PWD/.debs/root/usr/lib/x86_64-linux-gnu
built_in=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
if [ "$built_in" != "$PWD" ] && [ ! -e "$built_in" ]; then mkdir -p "$(dirname "$built_in")" && ln -s "$PWD" "$built_in"; fi
timeout 400 ctest --test-dir build -R 'hostile_test_unprivileged_gpu' -V > $OUT/unpriv.log 2>&1; echo "ctest exit $?"
grep -E "^[0-9]+: \[ +(OK|FAILED|SKIPPED) +\]|tests passed|tests failed|Skipped" $OUT/unpriv.log | tail -30
KGYM_TEST_DEVICE=cuda timeout 150 build/tests/hostile_test --gtest_filter='Containment.NoWorld*:Containment.ACandidateSees*' 2>&1 | grep -E "^\[ +(OK|FAILED)" 
