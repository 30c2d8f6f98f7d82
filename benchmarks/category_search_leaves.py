"""The category search of every leaf of a native categorical fit, timed one leaf at a time
on the calling thread (the compiled grower's ``best_category_in_leaf``), each leaf's
histogram warm as the grower leaves it (one untimed search first). ``record`` fits seed 0's
split of each set (``bench_categorical``'s ``rebel-native``) with the Python grower and keeps
every leaf's search arguments; ``time`` searches them again and prints the microseconds a
leaf (the median of ``--repeats`` passes) and a digest of the splits found. Record once, then
time two source trees in alternation: the same digest means the same splits::

    python benchmarks/category_search_leaves.py record splice dna calendarDOW
    PYTHONPATH=/tmp/before/src python benchmarks/category_search_leaves.py time splice dna
    python benchmarks/category_search_leaves.py time splice dna
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def record(name: str, store: Path) -> None:
    """Fits ``name`` natively with the Python grower, keeping each leaf's search."""
    from bench_categorical import make, native_split

    from rebelboost.ensemble import _compiled_stages
    from rebelboost.learners import compiled_grower, vector_tree

    searches = []
    search = vector_tree.best_category_split

    def kept(hist, features, layout, offsets, prior, min_count, smooth, min_per_category,
             max_left, max_onehot, incumbent=np.inf):
        searches.append((hist.copy(), np.array(features), layout.n_value_bins.copy(),
                         layout.has_missing.copy(), offsets.copy(), prior.copy(), min_count,
                         smooth, min_per_category, max_left, max_onehot,
                         int(layout.missing_bin), incumbent, int(layout.n_bins_total)))
        return search(hist, features, layout, offsets, prior, min_count, smooth,
                      min_per_category, max_left, max_onehot, incumbent)

    vector_tree.best_category_split = kept
    compiled_grower.applies = _compiled_stages.applies = lambda *args, **kwargs: False
    train, _, codes, _, _ = native_split(name, 0)
    make("rebel-native", 0).fit(train, codes)
    with open(store / f"{name}.pkl", "wb") as file:
        pickle.dump(searches, file)
    print(f"{name}: {len(searches)} leaves recorded", flush=True)


def time_searches(name: str, store: Path, repeats: int) -> None:
    """Searches the recorded leaves again: microseconds a leaf and the splits' digest."""
    from rebelboost.search.category_split import best_category_in_leaf

    with open(store / f"{name}.pkl", "rb") as file:
        searches = pickle.load(file)
    outs = [np.zeros(args[-1], bool) for args in searches]
    passes = []
    for _ in range(repeats + 1):  # (the first compiles)
        found, spent = [], 0.0
        for args, out in zip(searches, outs, strict=True):
            best_category_in_leaf(*args[:-1], 1, out)
            start = time.perf_counter()
            j, score, last, missing_left = best_category_in_leaf(*args[:-1], 1, out)
            spent += time.perf_counter() - start
            taken = j >= 0 and score < args[12] * (1.0 - 1e-12)  # (what the grower takes)
            found.append((int(j), float(score), int(last), bool(missing_left),
                          np.flatnonzero(out).tolist()) if taken else None)
        passes.append(spent)
    digest = hashlib.sha256(repr(found).encode()).hexdigest()[:12]
    print(f"{name}: {len(searches)} leaves, {np.median(passes[1:]) / len(searches) * 1e6:.1f} "
          f"us a leaf (passes {', '.join(f'{p * 1e3:.1f}' for p in passes[1:])} ms), "
          f"splits {digest}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("record", "time"))
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--store", type=Path, default=Path("/tmp/category_leaves"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    args.store.mkdir(parents=True, exist_ok=True)
    for name in args.sets:
        if args.what == "record":
            record(name, args.store)
        else:
            time_searches(name, args.store, args.repeats)


if __name__ == "__main__":
    main()
