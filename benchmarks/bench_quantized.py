"""Quantized against float split histograms (issue 27's accuracy pairing).

``RebelClassifier(random_state=seed)`` with default parameters and ``histogram_bits`` None
(float64 histograms) or each of ``--bits``, over the sets of ``bench_accuracy.py`` x
``--seeds``; test error and fit time (wall and process CPU time: the machine is shared, the
configurations of one (set, seed) run back to back in one process after a warm-up fit).
Resumable: every fit is one line of ``results/quantized.jsonl``; a rerun skips those done.
Target: mean test error within +-0.1 point of float, no set worse by more than 0.3.

    python benchmarks/bench_quantized.py --datasets satimage pendigits optdigits letter
    python benchmarks/bench_quantized.py --report
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_accuracy import DATASETS, load  # noqa: E402

from rebelboost import RebelClassifier  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "quantized.jsonl"


def _done() -> set:
    if not OUT.exists():
        return set()
    return {(r["dataset"], r["seed"], r["bits"]) for r in map(json.loads, OUT.open())}


def run(datasets, seeds, bits_list) -> None:
    done = _done()
    for name in datasets:
        X, y, Xt, yt = load(name)
        for bits in [None, *bits_list]:  # compile each path on this set's layout (sparse?)
            RebelClassifier(3, histogram_bits=bits, random_state=0).fit(X[:1000], y[:1000])
        for seed in seeds:
            for bits in [None, *bits_list]:
                if (name, seed, bits) in done:
                    continue
                model = RebelClassifier(histogram_bits=bits, random_state=seed)
                w, c = time.perf_counter(), time.process_time()
                model.fit(X, y)
                wall, cpu = time.perf_counter() - w, time.process_time() - c
                row = {"dataset": name, "seed": seed, "bits": bits, "wall_s": wall,
                       "cpu_s": cpu, "error": float(np.mean(model.predict(Xt) != yt)),
                       "train_loss": float(model.train_loss_[-1])}
                print(json.dumps(row), flush=True)
                OUT.parent.mkdir(exist_ok=True)
                with OUT.open("a") as f:
                    f.write(json.dumps(row) + "\n")


def report() -> None:
    rows = [json.loads(line) for line in OUT.open()]
    by = {(r["dataset"], r["seed"], r["bits"]): r for r in rows}
    bits_list = sorted({r["bits"] for r in rows if r["bits"] is not None})
    sets = [d for d in DATASETS if any(r["dataset"] == d for r in rows)]
    print(f"{'set':10s} {'bits':>4s} {'seeds':>5s} {'float err%':>10s} {'q err%':>7s} "
          f"{'diff pt':>8s} {'cpu ratio':>9s} {'wall ratio':>10s}")
    for bits in bits_list:
        diffs = []
        for name in sets:
            pairs = [(by[(name, s, None)], by[(name, s, bits)]) for s in range(10)
                     if (name, s, None) in by and (name, s, bits) in by]
            if not pairs:
                continue
            fe = 100 * np.mean([f["error"] for f, _ in pairs])
            qe = 100 * np.mean([q["error"] for _, q in pairs])
            cpu = np.sum([q["cpu_s"] for _, q in pairs]) / np.sum([f["cpu_s"] for f, _ in pairs])
            wall = (np.sum([q["wall_s"] for _, q in pairs])
                    / np.sum([f["wall_s"] for f, _ in pairs]))
            diffs.append(qe - fe)
            print(f"{name:10s} {bits:4d} {len(pairs):5d} {fe:10.2f} {qe:7.2f} {qe - fe:+8.2f} "
                  f"{cpu:9.2f} {wall:10.2f}")
        if diffs:
            print(f"{'mean':10s} {bits:4d} {'':5s} {'':10s} {'':7s} {np.mean(diffs):+8.2f} "
                  f"(worst set {max(diffs):+.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--bits", type=int, nargs="+", default=[8, 12])
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args()
    if not args.report:
        run(args.datasets, args.seeds, args.bits)
    report()


if __name__ == "__main__":
    main()
