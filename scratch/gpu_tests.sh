#!/bin/bash
set -u
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site
export NINJA_GAP_COMMIT=$(cut -c1-12 scratch/COMMIT)
export NINJA_GAP_COMMAND="nox --no-venv -s bench"
mkdir -p $OUT/res/logs
timeout 150 python3 -m kernels.bench softmax_fp16 > $OUT/res/logs/softmax_fp16.log 2>&1; echo "softmax_fp16 rc=$? $(( $(date +%s)-start ))s"
tail -5 $OUT/res/logs/softmax_fp16.log
cp gallery/measurements/softmax_fp16.json $OUT/res/ 2>/dev/null
touch /tmp/marker; sleep 1
left=$((540-$(date +%s)+start))
timeout $left python3 -m pytest -v -p no:cacheprovider -m "not browser" -rfE --durations=20 "$@" > $OUT/res/logs/pytest.log 2>&1; echo "pytest rc=$?"
tail -60 $OUT/res/logs/pytest.log
find . -path ./.whl -prune -o -newer /tmp/marker -type f -print | grep -v -E "__pycache__|\.pyc$" | head -30 > $OUT/res/logs/changed.txt
echo "changed files:"; cat $OUT/res/logs/changed.txt
tar -C $OUT -czf $OUT/res.tgz res && rm -rf $OUT/res
echo total $(( $(date +%s)-start ))s
