#!/bin/bash
# Device run from the repo root: extract tune (scratch/tune.tgz) into /tmp/t, put the
# records of the earlier calls (scratch/recs.tgz) in place, record the benchmarks named
# in $NAMES, then run the named test files with -n 8 until the call's limit.
#   run: NAMES="a b" bash scratch/gpu_finish.sh COMMIT TESTS_TIMEOUT tests/test_x.py ...
set -u
start=$(date +%s)
repo=$PWD; commit=$1; tt=$2; shift 2
mkdir -p /tmp/t && tar -xzf scratch/tune.tgz -C /tmp/t && ln -sfn $repo/.whl /tmp/t/.whl
tar -xzf scratch/recs.tgz -C /tmp/t/gallery/measurements
cd /tmp/t && echo $commit > scratch/COMMIT
bash scratch/gpu_record.sh 300 $NAMES
mv $OUT/res.tgz $OUT/rec.tgz
export PYTHONPATH=/tmp/site NINJA_GAP_COMMIT=$commit
python3 -m kernels.bench --stale; echo "stale rc=$?"
mkdir -p $OUT/res
left=$(( 575 - ($(date +%s)-start) )); [ $left -gt $tt ] && left=$tt
echo "tests get ${left}s"
timeout $left python3 -m pytest -m "not browser" -p no:cacheprovider -rfE -q -n 8 --timeout=400 "$@" > $OUT/res/pytest.log 2>&1
echo "tests rc=$? after $(( $(date +%s)-start ))s"
grep -E "passed|failed|error" $OUT/res/pytest.log | tail -3
grep -E "^(FAILED|ERROR)" $OUT/res/pytest.log | head -30
tar -C $OUT -czf $OUT/tests.tgz res && rm -rf $OUT/res
