#!/bin/bash
# Device run: the README's test session on the GPU (browser tests aside: no Chromium
# there), on the files named (all when none), then what `git status` says. Each test is
# named as it ends (-v) and stopped after 420 s (pytest-timeout, in the GPU image), so a
# run that hits the call's limit still says which test was slow and where it was.
#   run: bash scratch/gpu_tests.sh [tests/test_a.py ...]     carry: [".whl", "scratch"]
set -u
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site
mkdir -p $OUT/res
git status --short > $OUT/res/status_before.txt
timeout 560 python3 -m nox --no-venv -s tests -- -m "not browser" -p no:cacheprovider -rfE -v --timeout=420 --durations=30 "$@" > $OUT/res/pytest.log 2>&1
echo "tests rc=$? after $(( $(date +%s)-start ))s"
grep -E "passed|failed|error" $OUT/res/pytest.log | tail -3
grep -E "^(FAILED|ERROR)" $OUT/res/pytest.log | head -30
git status --short > $OUT/res/status_after.txt
echo "git status after (before: $(wc -l < $OUT/res/status_before.txt) lines):"; cat $OUT/res/status_after.txt
tar -C $OUT -czf $OUT/res.tgz res && rm -rf $OUT/res
