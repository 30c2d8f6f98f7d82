"""The default cost route's decisions, dumped and compared between two versions of the code.

A change that should leave the route's models alone (a faster evaluation of the same
function) is checked here: ``dump`` fits ``RebelClassifier(cost_matrix=C)`` on each set x
seed (``cost_suite.load_split``, at most 3,000 training rows) x the suite's six matrices
(``cost_suite.matrices``: four random, hedge, refer) and writes each case's route,
calibration kind, test decisions, test cost and posteriors; ``compare`` says, per set, how
many routes, kinds and decisions differ, the mean test costs and the largest posterior
difference.

    PYTHONPATH=<before>/src python benchmarks/cost_route_decisions.py dump before.json iris vowel
    python benchmarks/cost_route_decisions.py dump after.json iris vowel
    python benchmarks/cost_route_decisions.py compare before.json after.json
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict

os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import numpy as np  # noqa: E402
from cost_suite import FoldMemo, load_split, matrices  # noqa: E402


def dump(out: str, sets: list[str], seeds: int, n_jobs: int) -> None:
    from rebelboost import RebelClassifier

    memo, cases = FoldMemo(), []  # (the fold models do not depend on the matrix)
    for name in sets:
        for seed in range(seeds):
            X, y, X_test, y_test = load_split(name, seed, 3000)
            k = int(y.max()) + 1
            memo.clear()
            for label, cost in matrices(k, np.bincount(y, minlength=k) / len(y),
                                        np.random.default_rng(seed)):
                names = [str(c) for c in range(k)] + ["refer"]
                extra = {"decisions": names} if cost.shape[1] > k else {}
                model = RebelClassifier(cost_matrix=cost, random_state=seed, n_jobs=n_jobs,
                                        **extra).fit(X, y)
                pred = model.predict(X_test)
                pick = (np.array([names.index(str(p)) for p in pred]) if extra
                        else np.asarray(pred, dtype=int))
                cases.append({"set": name, "seed": seed, "matrix": label,
                              "route": model.cost_route_, "kind": model.calibration_.kind,
                              "cost": float(cost[y_test, pick].mean()), "pick": pick.tolist(),
                              "proba": model.predict_proba(X_test).tolist()})
            print(name, seed, flush=True)
    with open(out, "w") as f:
        json.dump(cases, f)


def compare(before: str, after: str) -> None:
    with open(before) as f, open(after) as g:
        a, b = json.load(f), json.load(g)
    if [(x["set"], x["seed"], x["matrix"]) for x in a] != [
            (x["set"], x["seed"], x["matrix"]) for x in b]:
        raise SystemExit("the two dumps hold different cases")
    sets = defaultdict(lambda: {"cases": 0, "routes": 0, "picks": 0, "rows": 0,
                                "before": 0.0, "after": 0.0, "proba": 0.0})
    for x, y in zip(a, b, strict=True):
        s = sets[x["set"]]
        s["cases"] += 1
        s["routes"] += (x["route"], x["kind"]) != (y["route"], y["kind"])
        s["picks"] += int(np.sum(np.array(x["pick"]) != np.array(y["pick"])))
        s["rows"] += len(x["pick"])
        s["before"] += x["cost"]
        s["after"] += y["cost"]
        s["proba"] = max(s["proba"], float(np.abs(np.subtract(x["proba"], y["proba"])).max()))
    print("| set | cases | route or kind changed | decisions changed | mean test cost "
          "before -> after | largest posterior change |")
    print("|---|---|---|---|---|---|")
    for name, s in sets.items():
        n = s["cases"]
        print(f"| {name} | {n} | {s['routes']} | {s['picks']} of {s['rows']} | "
              f"{s['before'] / n:.5f} -> {s['after'] / n:.5f} | {s['proba']:.1e} |")
    total = {key: sum(s[key] for s in sets.values()) for key in ("cases", "routes", "picks",
                                                                  "rows")}
    print(f"| all | {total['cases']} | {total['routes']} | {total['picks']} of "
          f"{total['rows']} | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("sets", nargs="+")
    d.add_argument("--seeds", type=int, default=3)
    d.add_argument("--n-jobs", type=int, default=2)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out, args.sets, args.seeds, args.n_jobs)
    else:
        compare(args.before, args.after)


if __name__ == "__main__":
    main()
