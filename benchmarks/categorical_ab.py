"""Native categorical fits of two checkouts side by side: fit CPU seconds and test error.

Times one fit per set (after a warm-up fit of the same rows, so numba compiles outside the
timing) with the source tree given, on seed 0's split of ``bench_categorical``. Run it for the
two trees in alternation and compare the same set's times, e.g. before and after a change to
the category search::

    git worktree add /tmp/before <commit>
    for i in 1 2; do for tree in /tmp/before .; do
        python benchmarks/categorical_ab.py $tree allbp allhypo dermatology splice; done; done

The peers are timed by ``categorical_fit_times.py``, each library in its own process: after
rebelboost's import their OpenMP threads would wait as rebelboost sets them to (stop 50).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np


def main() -> None:
    tree, sets = Path(sys.argv[1]).resolve(), sys.argv[2:]
    sys.path.insert(0, str(tree / "src"))
    sys.path.insert(0, str(Path(__file__).parent))
    import rebelboost

    if not Path(rebelboost.__file__).resolve().is_relative_to(tree):
        raise SystemExit(f"rebelboost came from {rebelboost.__file__}, not {tree}")
    from bench_categorical import make, native_split

    for name in sets:
        train, test, codes, classes, y_te = native_split(name, 0)
        make("rebel-native", 0).fit(train, codes)
        start, wall = time.process_time(), time.perf_counter()
        est = make("rebel-native", 0).fit(train, codes)
        cpu, wall = time.process_time() - start, time.perf_counter() - wall
        error = np.mean(classes[np.asarray(est.predict(test)).reshape(-1).astype(np.int64)]
                        != y_te)
        print(f"{tree.name or tree} {name} fit_cpu_s={cpu:.3f} fit_wall_s={wall:.3f} "
              f"error={error:.4f}", flush=True)


if __name__ == "__main__":
    main()
