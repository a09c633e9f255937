#!/usr/bin/env bash
# The main job until the lab lands: the data-and-evaluation pipeline on real public data.
#   1. PRM800K raw records -> prmkit -> PRM800K, checked equal; stats of the prmkit file
#   2. grade every MATH-500 reference solution's boxed answer against its answer field
#   3. exact best-of-N vs majority / weighted vote vs pass@N on a real scored candidate pool
#   4. one self-contained HTML report
set -euo pipefail
cd "$(dirname "$0")/.."
prmkit=${PRMKIT:-.venv/bin/prmkit}
py=${PYTHON:-.venv/bin/python}
data=${PRMKIT_SHARED_DATA:-../shared/data}
out=${PRMKIT_RUN_DIR:-runs/demo}
if [ ! -d "$data" ]; then
  echo "real data not found at $data: set PRMKIT_SHARED_DATA to a copy of shared/data" >&2
  exit 2
fi
mkdir -p "$out"

echo "== 1. PRM800K round trip and stats"
$prmkit data convert --from prm800k --to prmkit "$data/prm800k/openr_samples_prm800k.jsonl" "$out/prm800k.prmkit.jsonl.gz"
$prmkit data convert --from prmkit --to prm800k "$out/prm800k.prmkit.jsonl.gz" "$out/prm800k.back.jsonl"
$py - "$data/prm800k/openr_samples_prm800k.jsonl" "$out/prm800k.back.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
same = sum(x == y for x, y in zip(a, b))
print(f"round trip: {same}/{len(a)} records give back the same JSON")
sys.exit(0 if same == len(a) == len(b) else 1)
PY
$prmkit data stats "$out/prm800k.prmkit.jsonl.gz"

echo "== 2. grading MATH-500 reference solutions"
$prmkit grade "$data/math500/test.jsonl" --given-field solution --gold-field answer "$out/math500.graded.jsonl"

echo "== 3. best-of-N on a real candidate pool (Qwen2.5-Math, 100 MATH problems x 8 samples)"
$prmkit eval bon "$data/candidates/qwen25math_math_cot_100.jsonl" --score pred_score --ns 1,2,4,8 --out-dir "$out" --name qwen25math

echo "== 4. report"
$prmkit report "$out"
echo "done: open $out/report.html"
