"""Two versions of rebelboost's default fit, their peak memory measured alternately.

Each version is a source tree (``git worktree add --detach /tmp/before REV``, then its
``src``); every fit runs in a fresh process with that tree first on ``PYTHONPATH``, on the
training split of ``bench_accuracy.py``, as that benchmark measures it: a 3-tree warm-up on
3,000 rows, then the default fit (2 threads, an iteration callback) and its peak RSS over the
RSS before it (MiB). Run the versions once beforehand so that numba's caches hold their
kernels (a compile inside the fit is counted). Run it from a checkout's root beside
``../shared/data``.

    python benchmarks/peak_memory_ab.py satimage,shuttle /tmp/before/src src 2
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

CHILD = r"""
import sys
sys.path.insert(0, "benchmarks")
from bench_accuracy import load
from bench_core import _reset_peak, _rss_kib
from rebelboost import RebelClassifier
X, y, _, _ = load(sys.argv[1])
callbacks = [lambda info: False]
RebelClassifier(3, n_jobs=2, random_state=0).fit(X[:3000], y[:3000], callbacks=callbacks)
before = _rss_kib()
_reset_peak()
RebelClassifier(n_jobs=2, random_state=0).fit(X, y, callbacks=callbacks)
print((_rss_kib("VmHWM") - before) / 1024)
"""


def peak(src: str, dataset: str) -> float:
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", CHILD, dataset], env=env, check=True,
                         capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sets, before, after = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    print("| set | before (MiB), each round | after (MiB), each round | median after / before |")
    print("|---|---|---|---|")
    for dataset in sets:
        b, a = [], []
        for _ in range(rounds):
            b.append(peak(before, dataset))
            a.append(peak(after, dataset))
        ratio = float(np.median(np.array(a) / np.array(b)))
        print(f"| {dataset} | {', '.join(f'{v:.1f}' for v in b)} | "
              f"{', '.join(f'{v:.1f}' for v in a)} | {ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()
