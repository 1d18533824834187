#!/bin/bash
# Device run: record benchmarks, each in its own process, with the commit taken from
# scratch/COMMIT (the device's git does not know the branch). Stops starting new ones
# after BUDGET_S seconds.   run: bash scratch/gpu_record.sh BUDGET_S NAME...
set -u
start=$(date +%s)
budget=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site
export NINJA_GAP_COMMIT=$(cat scratch/COMMIT)
export NINJA_GAP_COMMAND="nox --no-venv -s bench"
mkdir -p $OUT/res/logs
for name in "$@"; do
  el=$(( $(date +%s)-start ))
  if [ $el -gt $budget ]; then echo "SKIPPED $name (elapsed $el)" | tee -a $OUT/res/logs/summary.txt; continue; fi
  left=$((560-el)); [ $left -gt 400 ] && left=400
  t0=$(date +%s)
  timeout $left python3 -m kernels.bench $name > $OUT/res/logs/$name.log 2>&1
  echo "$name rc=$? $(( $(date +%s)-t0 ))s" | tee -a $OUT/res/logs/summary.txt
  tail -2 $OUT/res/logs/$name.log
done
cp gallery/measurements/*.json $OUT/res/
tar -C $OUT -czf $OUT/res.tgz res && rm -rf $OUT/res
echo total $(( $(date +%s)-start ))s
