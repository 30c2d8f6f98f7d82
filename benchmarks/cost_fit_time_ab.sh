#!/usr/bin/env bash
# The cost route's fit time over the plain fit, the code at BEFORE (a worktree's src, e.g.
# git worktree add ../before HEAD~1) against this checkout, alternated set by set, two rounds
# each (cost_fit_time.py, 2 threads, best of 3). One line per run, prefixed "before"/"after".
#   benchmarks/cost_fit_time_ab.sh ../before/src iris vehicle > results/ab.txt
set -euo pipefail
before=$1; shift
cd "$(dirname "$0")"
python=${PYTHON:-../.venv/bin/python}
for set in "$@"; do
  for round in 1 2; do
    PYTHONPATH=$before $python cost_fit_time.py "$set" --n-jobs 2 --repeats 3 | tail -1 \
      | sed 's/^/before /'
    $python cost_fit_time.py "$set" --n-jobs 2 --repeats 3 | tail -1 | sed 's/^/after /'
  done
done
