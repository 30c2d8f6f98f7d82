"""Predictions (issue 19): batch throughput and single-row latency of a REBEL tree model against
LightGBM ``predict``, XGBoost ``inplace_predict``, lleaves and TL2cgen (treelite) on models of
about the same test error, without and with REBEL's exact early exit.

Models (cached in ``--cache``; fitted once): REBEL ``RebelClassifier(300, weak_learner='tree',
max_depth=3, random_state=0)`` (the paper's binary trees) on the official training split;
LightGBM (``num_leaves=8``, lr 0.1, K trees a round) and XGBoost (hist, ``max_depth=3``,
lr 0.3) trained until their test error first falls to REBEL's or below (a callback stops
them), so their errors are matched from below. lleaves and TL2cgen compile that LightGBM
model. Every library runs on ``--threads`` threads.

Timing: ``--rounds`` rounds; in each round every method scores the whole test set once (order
rotated per round) and the ratio of throughputs to LightGBM's of that round is taken; the table
gives medians of rounds and of ratios. Single rows: 10 blocks of 1,000 calls per method,
interleaved, each call timed alone (a float64 row; REBEL's ``predict`` validates it as it
would any input); p50 and p99 over the 10,000 calls. REBEL's early-exit labels are checked
against its full labels in every batch round.

Usage (from the repository root)::

    python benchmarks/bench_predict.py                   # both data sets, prints the section
    python benchmarks/bench_predict.py --write           # and writes it into BENCHMARKS.md
    python benchmarks/bench_predict.py --check-every 1 2 4 8 16 --datasets letter
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
SECTION = "## Predictions (issue 19)"
NOTES_BEGIN = "<!-- notes: kept when the section is regenerated -->"


def load(name: str):
    with np.load(DATA / f"{name}.npz") as d:
        return (d["X_train"].astype(np.float64), d["y_train"], d["X_test"].astype(np.float64),
                d["y_test"])


def fit_models(name: str, cache: Path, threads: int, rebel_kind: str = "tree",
               peers: str = "matched"):
    """REBEL, LightGBM and XGBoost models of the data set (from the cache when there).

    ``rebel_kind`` 'tree': the paper's 300 depth-3 trees; 'default': ``RebelClassifier()``
    (100 vector-leaf trees). ``peers`` 'matched': the peers are trained until their test error
    reaches REBEL's; 'defaults': each library's own defaults, 100 rounds (LightGBM 31 leaves,
    lr 0.1; XGBoost depth 6, eta 0.3), whatever their test error."""
    import lightgbm as lgb
    import xgboost as xgb

    from rebelboost import RebelClassifier, load_model

    X, y, X_test, y_test = load(name)
    classes = np.unique(y)
    codes, codes_test = np.searchsorted(classes, y), np.searchsorted(classes, y_test)
    cache.mkdir(parents=True, exist_ok=True)
    rebel_path = cache / f"{name}-rebel-{'d3-300' if rebel_kind == 'tree' else 'default'}.json.gz"
    if not rebel_path.exists():
        model = (RebelClassifier(300, weak_learner="tree", max_depth=3, random_state=0)
                 if rebel_kind == "tree" else RebelClassifier(random_state=0))
        model.fit(X, y).save(rebel_path)
    rebel = load_model(rebel_path)
    target = float(np.mean(rebel.predict(X_test) != y_test))

    suffix = "" if peers == "matched" else "-defaults"
    lgb_path = cache / f"{name}-lightgbm{suffix}.txt"
    xgb_path = cache / f"{name}-xgboost{suffix}.ubj"
    if peers == "defaults":
        if not lgb_path.exists():
            lgb.train({"objective": "multiclass", "num_class": len(classes), "num_leaves": 31,
                       "learning_rate": 0.1, "num_threads": threads, "verbose": -1},
                      lgb.Dataset(X, codes), 100).save_model(lgb_path)
        if not xgb_path.exists():
            xgb.train({"objective": "multi:softprob", "num_class": len(classes),
                       "max_depth": 6, "eta": 0.3, "tree_method": "hist", "nthread": threads},
                      xgb.DMatrix(X, codes), 100).save_model(xgb_path)
    if not lgb_path.exists():
        def stop(env):
            if env.evaluation_result_list[0][2] <= target:
                raise lgb.callback.EarlyStopException(env.iteration, env.evaluation_result_list)
        params = {"objective": "multiclass", "num_class": len(classes), "num_leaves": 8,
                  "learning_rate": 0.1, "num_threads": threads, "verbose": -1,
                  "metric": "multi_error"}
        train = lgb.Dataset(X, codes)
        booster = lgb.train(params, train, 3000, valid_sets=[lgb.Dataset(X_test, codes_test,
                                                                         reference=train)],
                            callbacks=[stop])
        booster.save_model(lgb_path, num_iteration=booster.current_iteration())
    if not xgb_path.exists():
        class Stop(xgb.callback.TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                return evals_log["test"]["merror"][-1] <= target
        params = {"objective": "multi:softprob", "num_class": len(classes), "max_depth": 3,
                  "eta": 0.3, "tree_method": "hist", "nthread": threads,
                  "eval_metric": "merror"}
        dtest = xgb.DMatrix(X_test, codes_test)
        xgb.train(params, xgb.DMatrix(X, codes), 3000, evals=[(dtest, "test")],
                  callbacks=[Stop()], verbose_eval=False).save_model(xgb_path)
    return rebel, lgb_path, xgb_path, X_test, y_test, classes


class Local:
    """A predictor in this process: ``batch(X)`` and ``row(x)`` give class codes or labels."""

    def __init__(self, batch, row, info: str):
        self.predict, self.row, self.info = batch, row, info

    def time_batch(self, X):
        start = time.perf_counter()
        got = self.predict(X)
        return time.perf_counter() - start, got

    def time_rows(self, rows, index):
        out, f = [], self.row
        for i in index:
            x = rows[i]
            start = time.perf_counter_ns()
            f(x)
            out.append(time.perf_counter_ns() - start)
        return out


class Remote(Local):
    """lleaves in a worker process of its own virtual environment (``--lleaves-python``: lleaves
    needs an llvmlite older than numba's); it times itself, so the pipe is not timed."""

    def __init__(self, python: str, args: list[str], info: str):
        self.proc = subprocess.Popen([python, __file__, "--worker", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.info = info
        self.predict = lambda X: np.array(self._ask("labels").split(), np.int64)

    def _ask(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def time_batch(self, X):
        seconds, *codes = self._ask("batch").split()
        return float(seconds), np.array(codes, np.int64)

    def time_rows(self, rows, index):
        return [int(v) for v in self._ask("rows " + " ".join(map(str, index))).split()]


def worker(name: str, model_file: str, cache: str, threads: int):
    """The lleaves side of :class:`Remote`: answers ``labels``, ``batch`` and ``rows i j ...``."""
    import lleaves

    X = load(name)[2]
    model = lleaves.Model(model_file=model_file)
    model.compile(cache=cache)
    rows = [X[i:i + 1] for i in range(len(X))]
    for line in sys.stdin:
        cmd, *rest = line.split()
        if cmd == "labels":
            reply = model.predict(X, n_jobs=threads).argmax(1)
        elif cmd == "batch":
            start = time.perf_counter()
            codes = model.predict(X, n_jobs=threads).argmax(1)
            reply = [time.perf_counter() - start, *codes]
        else:
            reply = []
            for i in map(int, rest):
                start = time.perf_counter_ns()
                model.predict(rows[i], n_jobs=1).argmax(1)
                reply.append(time.perf_counter_ns() - start)
        print(" ".join(map(str, reply)), flush=True)


def methods(name, rebel, lgb_path, xgb_path, args):
    """name -> predictor (:class:`Local` or :class:`Remote`) returning class codes or labels."""
    cache, threads, check_every = args.cache, args.threads, args.check_every
    import lightgbm as lgb
    import xgboost as xgb

    out = {}
    out["REBEL"] = Local(rebel.predict, rebel.predict, f"{len(rebel.model_.learners)} trees")
    for every in check_every:
        def exact(X, every=every):
            codes, _ = rebel.model_.predict_codes(rebel._check_X(X), early_exit="exact",
                                                  check_every=every)
            return rebel.classes_[codes]
        label = "REBEL, exact early exit" + (f" (check every {every})" if len(check_every) > 1
                                             else "")
        out[label] = Local(exact, exact, "")
    booster = lgb.Booster(model_file=str(lgb_path))
    n_lgb = booster.num_trees()
    out["LightGBM predict"] = Local(lambda X: booster.predict(X, num_threads=threads).argmax(1),
                                    lambda x: booster.predict(x, num_threads=threads).argmax(1),
                                    f"{n_lgb} trees")
    xgbm = xgb.Booster(model_file=str(xgb_path))
    xgbm.set_param({"nthread": threads})
    n_xgb = xgbm.num_boosted_rounds()
    out["XGBoost inplace_predict"] = Local(lambda X: xgbm.inplace_predict(X).argmax(1),
                                           lambda x: xgbm.inplace_predict(x).argmax(1),
                                           f"{n_xgb} rounds")
    if args.lleaves_python:
        out["lleaves (LightGBM model)"] = Remote(args.lleaves_python, [
            name, str(lgb_path), str(cache / f"{lgb_path.stem}.lleaves.so"), str(threads)],
            f"{n_lgb} trees")
    try:
        import tl2cgen
        import treelite

        lib = cache / f"{lgb_path.stem}.tl2cgen.so"
        if not lib.exists():
            tl2cgen.export_lib(treelite.frontend.load_lightgbm_model(str(lgb_path)),
                               toolchain="gcc", libpath=str(lib),
                               params={"parallel_comp": 16}, nthread=threads)
        pred = tl2cgen.Predictor(str(lib), nthread=threads)

        def tl2(X):
            return pred.predict(tl2cgen.DMatrix(X, dtype="float64")).reshape(len(X), -1).argmax(1)
        out["TL2cgen (LightGBM model)"] = Local(tl2, tl2, f"{n_lgb} trees")
    except Exception as exc:
        print(f"tl2cgen: {type(exc).__name__}: {exc}", file=sys.stderr)
    return out


def batch(ms, X, rounds: int, reference):
    """Seconds per method per round (order rotated per round), REBEL's labels checked."""
    names = list(ms)
    times = {n: [] for n in names}
    for r in range(rounds + 1):
        for n in names[r % len(names):] + names[:r % len(names)]:
            elapsed, got = ms[n].time_batch(X)
            if n.startswith("REBEL"):
                assert np.array_equal(got, reference), f"{n}: labels differ from predict"
            if r:  # round 0 warms up
                times[n].append(elapsed)
    return {n: np.array(t) for n, t in times.items()}


def latency(ms, X, blocks: int = 10, calls: int = 1000):
    """Microseconds of each one-row call: ``blocks`` interleaved blocks of ``calls`` rows."""
    names = list(ms)
    times = {n: [] for n in names}
    rows = [X[i:i + 1] for i in range(len(X))]
    for n in names:
        ms[n].time_rows(rows, range(50))
    for b in range(blocks):
        index = [(b * calls + i) % len(rows) for i in range(calls)]
        for n in names[b % len(names):] + names[:b % len(names)]:
            times[n] += ms[n].time_rows(rows, index)
    return {n: np.array(t) / 1e3 for n, t in times.items()}


def cascades(rebel, lgb_path, X_test, y_test, classes, rounds: int, threads: int) -> list[str]:
    """Accuracy/speed of REBEL's soft cascades (calibrated on the even test rows, measured on
    the odd ones) against its exact exit and LightGBM's ``pred_early_stop`` margins."""
    import lightgbm as lgb

    X_cal, X, y = X_test[::2], np.ascontiguousarray(X_test[1::2]), y_test[1::2]
    booster = lgb.Booster(model_file=str(lgb_path))
    full = rebel.predict(X)
    lgb_full = booster.predict(X, num_threads=threads).argmax(1)
    learners = len(rebel.model_.learners)
    runs = {"REBEL, full": (None, None), "REBEL, exact exit": ("exact", None)}
    for keep in (0.999, 0.995, 0.99, 0.98, 0.95):
        runs[f"REBEL, soft cascade keep {keep}"] = (rebel.calibrate_cascade(X_cal, keep), None)
    runs["LightGBM, full"] = (None, {})
    for margin in (8.0, 4.0, 2.0, 1.0):
        runs[f"LightGBM, pred_early_stop margin {margin}"] = (None, {
            "pred_early_stop": True, "pred_early_stop_freq": 10,
            "pred_early_stop_margin": margin})
    names = list(runs)
    times = {n: [] for n in names}
    for r in range(rounds + 1):
        for n in names[r % len(names):] + names[:r % len(names)]:
            exit_, lgb_params = runs[n]
            start = time.perf_counter()
            if lgb_params is None:
                rebel.predict(X, early_exit=exit_)
            else:
                booster.predict(X, num_threads=threads, **lgb_params)
            if r:
                times[n].append(time.perf_counter() - start)
    base = np.array(times["REBEL, full"])
    lines = ["Accuracy/speed trade-off (calibration: the even test rows; measured on the odd "
             f"ones, {len(X)} rows): agreement with the same library's full model, test error, "
             "learners evaluated, throughput against REBEL's full evaluation (median of ratios).",
             "", "| method | agrees with full | test error | learners evaluated | rows/s | "
             "x REBEL full |", "|---|---|---|---|---|---|"]
    for n in names:
        exit_, lgb_params = runs[n]
        if lgb_params is None:
            codes, used = rebel.model_.predict_codes(X, early_exit=exit_)
            got, ref, fraction = rebel.classes_[codes], full, f"{used.mean() / learners:.3f}"
        else:
            got = booster.predict(X, num_threads=threads, **lgb_params).argmax(1)
            ref, fraction = lgb_full, "—"
            got_labels = classes[got]
        err = np.mean((got if lgb_params is None else got_labels) != y)
        lines.append(f"| {n} | {np.mean(got == ref):.4f} | {err:.4f} | {fraction} | "
                     f"{len(X) / np.median(times[n]):,.0f} | "
                     f"{np.median(base / np.array(times[n])):.2f} |")
    return lines + [""]


def run(name: str, args) -> list[str]:
    rebel, lgb_path, xgb_path, X_test, y_test, classes = fit_models(
        name, args.cache, args.threads, args.rebel, args.peers)
    ms = methods(name, rebel, lgb_path, xgb_path, args)
    reference = rebel.predict(X_test)
    errors = {n: float(np.mean(classes[np.asarray(m.predict(X_test))] != y_test)
                       if not n.startswith("REBEL") else np.mean(m.predict(X_test) != y_test))
              for n, m in ms.items()}
    fractions = {}
    for every in args.check_every:
        _, used = rebel.model_.predict_codes(X_test, early_exit="exact", check_every=every)
        fractions[every] = used.mean() / len(rebel.model_.learners)
    times = batch(ms, X_test, args.rounds, reference)
    lat = latency(ms, X_test) if not args.no_latency else None
    base = times["LightGBM predict"]
    lat_base = None if lat is None else np.median(lat["LightGBM predict"])
    n, d = X_test.shape
    lines = [f"### {name} test set ({n} x {d}, K={len(classes)})", "",
             "Mean fraction of learners evaluated with exact early exit: "
             + ", ".join(f"{f:.3f} (check every {e})" for e, f in fractions.items()), "",
             "| method | model | test error | rows/s (median) | x LightGBM (median of ratios) "
             "| one row p50 (us) | one row p99 (us) | p50 / LightGBM's |",
             "|---|---|---|---|---|---|---|---|"]
    for m, method in ms.items():
        info = method.info
        rate = n / np.median(times[m])
        ratio = np.median(base / times[m])
        row = f"| {m} | {info} | {errors[m]:.4f} | {rate:,.0f} | {ratio:.2f} |"
        if lat is not None:
            p50, p99 = np.percentile(lat[m], [50, 99])
            row += f" {p50:.1f} | {p99:.1f} | {p50 / lat_base:.2f} |"
        else:
            row += " — | — | — |"
        lines.append(row)
    lines.append("")
    if args.cascades:
        lines += cascades(rebel, lgb_path, X_test, y_test, classes, args.rounds, args.threads)
    return lines


def header(args) -> list[str]:
    import lightgbm
    import numba
    import sklearn
    import xgboost

    import rebelboost

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    versions = [f"rebelboost {rebelboost.__version__}", f"numpy {np.__version__}",
                f"numba {numba.__version__}", f"scikit-learn {sklearn.__version__}",
                f"lightgbm {lightgbm.__version__}", f"xgboost {xgboost.__version__}"]
    for mod in ("lleaves", "treelite", "tl2cgen"):
        try:
            from importlib.metadata import version

            versions.append(f"{mod} {version(mod)}")
        except Exception:
            versions.append(f"{mod} not installed")
    command = "python benchmarks/bench_predict.py " + " ".join(sys.argv[1:])
    return [SECTION, "", f"Command (from the repository root): `{command.strip()}`  ",
            f"Date: {datetime.date.today()}; code: commit {commit}"
            + (" with uncommitted changes" if dirty else "") + "  ",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Linux; {args.threads} "
            f"threads for every library; load average at start "
            f"{os.getloadavg()[0]:.1f}  ",
            f"Versions: Python {platform.python_version()}, " + ", ".join(versions), ""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mnist", "letter"])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--check-every", type=int, nargs="+", default=None)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--cascades", action="store_true",
                        help="also the soft cascades' accuracy/speed table")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/rebelboost-bench-predict"))
    parser.add_argument("--rebel", choices=["tree", "default"], default="tree",
                        help="the paper's 300 depth-3 trees, or RebelClassifier()'s vector-leaf "
                        "trees (use another --cache: the peers are matched to it)")
    parser.add_argument("--peers", choices=["matched", "defaults"], default="matched",
                        help="peers trained to REBEL's test error, or their libraries' "
                             "defaults (100 rounds)")
    parser.add_argument("--write", action="store_true", help="write the section to BENCHMARKS.md")
    parser.add_argument("--lleaves-python", default=None,
                        help="python of a virtual environment with lleaves (and its llvmlite)")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        name, model_file, cache, threads = args.worker
        return worker(name, model_file, cache, int(threads))
    if args.check_every is None:
        from rebelboost.engine.early_exit import CHECK_EVERY

        args.check_every = [CHECK_EVERY]
    import numba

    numba.set_num_threads(args.threads)
    lines = header(args)
    print("\n".join(lines), flush=True)
    for name in args.datasets:
        part = run(name, args)
        print("\n".join(part), flush=True)
        lines += part
    text = "\n".join(lines)
    if args.write:
        path = ROOT / "BENCHMARKS.md"
        doc = path.read_text()
        if SECTION in doc:
            head, rest = doc.split(SECTION, 1)
            tail = rest[rest.find("\n## "):] if "\n## " in rest else "\n"
            section = rest[:len(rest) - len(tail)] if "\n## " in rest else rest
            if NOTES_BEGIN in section:  # hand-written notes survive a rerun
                text += "\n" + section[section.index(NOTES_BEGIN):].rstrip("\n") + "\n"
            doc = head + text + tail
        else:
            doc = doc.rstrip("\n") + "\n\n" + text
        path.write_text(doc)


if __name__ == "__main__":
    main()
