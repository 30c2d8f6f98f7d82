"""The category search of every leaf of a native categorical fit, timed on the calling
thread in one compiled loop over the leaves, as the compiled grower calls it
(``best_category_in_leaf``). ``record`` fits seed 0's split of each set
(``bench_categorical``'s ``rebel-native``) with the Python grower and keeps every leaf's
search arguments; ``time`` searches them again and prints the microseconds a leaf (the best
of ``--repeats`` passes) and a digest of the splits found. Record once, then time two source
trees in alternation: the same digest means the same splits::

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


def _loop():
    """A compiled loop searching every recorded leaf of a set, as the compiled grower calls
    the search (no Python between leaves: a call from Python unboxes each argument, which
    costs as much as a search of few features)."""
    import numba

    from rebelboost.search.category_split import best_category_in_leaf

    @numba.njit
    def loop(hists, features, nvb, has_missing, offsets, priors, min_count, smooth,
             min_per_category, max_left, max_onehot, missing_bin, incumbents, outs, found,
             scores):
        for i in range(hists.shape[0]):
            j, score, last, missing_left = best_category_in_leaf(
                hists[i], features, nvb, has_missing, offsets, priors[i], min_count, smooth,
                min_per_category, max_left, max_onehot, missing_bin, incumbents[i], 1,
                outs[i])
            found[i, 0], found[i, 1], found[i, 2], scores[i] = j, last, missing_left, score
    return loop


def time_searches(name: str, store: Path, repeats: int) -> None:
    """Searches the recorded leaves again in one compiled loop: microseconds a leaf and the
    splits' digest."""
    with open(store / f"{name}.pkl", "rb") as file:
        searches = pickle.load(file)
    first = searches[0]
    for args in searches:  # (one set's leaves share all but their sums, prior and incumbent)
        assert all(np.array_equal(a, b) for i, (a, b) in enumerate(zip(args, first, strict=True))
                   if i not in (0, 5, 12))
    hists = np.stack([args[0] for args in searches])
    priors = np.stack([args[5] for args in searches])
    incumbents = np.array([args[12] for args in searches])
    outs = np.zeros((len(searches), first[-1]), bool)
    found = np.zeros((len(searches), 3), np.int64)
    scores = np.zeros(len(searches))
    loop = _loop()
    arguments = (hists, *first[1:5], priors, *first[6:12], incumbents, outs, found, scores)
    passes = []
    for _ in range(repeats + 1):  # (the first compiles)
        start = time.perf_counter()
        loop(*arguments)
        passes.append(time.perf_counter() - start)
    # what the grower takes: a split better than the incumbent
    taken = (found[:, 0] >= 0) & (scores < incumbents * (1.0 - 1e-12))
    digest = hashlib.sha256(repr([(tuple(f), s, np.flatnonzero(o).tolist()) if t else None
                                  for f, s, o, t in zip(found.tolist(), scores.tolist(), outs,
                                                        taken, strict=True)]).encode())
    print(f"{name}: {len(searches)} leaves, {min(passes[1:]) / len(searches) * 1e6:.2f} "
          f"us a leaf (passes {', '.join(f'{p * 1e3:.1f}' for p in passes[1:])} ms), "
          f"splits {digest.hexdigest()[:12]}", flush=True)


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
