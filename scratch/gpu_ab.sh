#!/bin/bash
# Device run: the A/B of tune's knobs (scratch/ab.py) at the sizes the records missed.
#   run: bash scratch/gpu_ab.sh [filter]     carry: [".whl", "scratch"]
set -u
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/res
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/res/gpu.txt
python3 -c "import triton, torch; print(triton.__version__, torch.__version__)" >> $OUT/res/gpu.txt 2>&1
timeout 540 python3 scratch/ab.py "$@" > $OUT/res/ab.log 2>&1; echo "ab rc=$?"
mv $OUT/ab.json $OUT/res/ 2>/dev/null
grep -v "^\s*$" $OUT/res/ab.log | tail -150
tar -C $OUT -czf $OUT/res.tgz res && rm -rf $OUT/res
echo total $(( $(date +%s)-start ))s
