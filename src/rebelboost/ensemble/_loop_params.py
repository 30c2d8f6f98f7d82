"""The boosting loop's parameters: the same name, constraint and meaning in every estimator,
documented once (``{loop}`` in an estimator's docstring, :func:`document_loop`)."""

from __future__ import annotations

import numbers
import re

from sklearn.utils._param_validation import Interval, StrOptions

# Parameters of the boosting loop, the same name and meaning in every estimator.
LOOP_CONSTRAINTS: dict = {
    "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
    "validation_metric": [StrOptions({"loss", "cost"})],
    "max_bins": [Interval(numbers.Integral, 2, 255, closed="both")],
    "target_loss": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither"),
                    None],
    "early_stopping": ["boolean", StrOptions({"auto"})],
    "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
    "random_state": ["random_state"],
    "n_jobs": [Interval(numbers.Integral, None, -1, closed="right"),
               Interval(numbers.Integral, 1, None, closed="left"), None],
    "verbose": ["verbose"],
}

AUTO_EARLY_STOPPING_ROWS = 10_000  # early_stopping='auto' holds out a split above this

LOOP_PARAMETERS_DOC = """\
    learning_rate : float, default=1.0
        Shrinkage: every iteration's step (step vector, alpha) is multiplied by it (LightGBM's
        ``learning_rate``). 1 takes the booster's own closed-form or line-search step.
    target_loss : 'auto', float or None, default=None
        Stop once the training loss falls below this value ('auto': ``1 / n_samples``);
        ``n_estimators`` stays the cap. Training also stops when the loss reaches 0.
    early_stopping : bool or 'auto', default=False
        Hold out ``validation_fraction`` of the training set (stratified), stop when the
        ``validation_metric`` has not improved by ``tol`` (relative) for ``n_iter_no_change``
        iterations, and keep the model at its best iteration. 'auto': on when the training
        set has more than 10,000 rows (as scikit-learn's HistGradientBoosting). Off by
        default, as measured: at REBEL's default 100 iterations test error was still falling
        at 300 on the five sets tried (letter, satimage, pendigits, connect4, sleep), so 'auto'
        only took 10% of the rows away (MNIST test
        error 0.0205 against 0.0201 without it; letter reached LightGBM's test error in 0.86x
        its time against 0.69x; BENCHMARKS.md, issue 16).
    validation_metric : {'cost', 'loss'}, default='cost'
        What early stopping watches: the mean cost of the model's predictions on the
        validation split (the error rate under 0-1 costs), or the booster's loss there. The
        exponential losses turn up long before the error does: on letter, satimage, sleep and
        pendigits, stopping on the loss (patience 10) kept 7-20 iterations and ended at
        1.1-2.9x the test error of stopping on the cost with patience 50
        (``python benchmarks/early_stopping.py``).
    validation_fraction : float, default=0.1
    n_iter_no_change : int, default=50
        Patience, in iterations. The validation error moves in steps of one row: with a
        patience of 10 or 20 it stopped REBEL on satimage and pendigits after 13-35
        iterations at up to 1.3x the test error of a patience of 50 (same script).
    tol : float, default=1e-7
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split and the binning subsample.
    n_jobs : int or None, default=None
        Threads for the kernels (and BLAS); None or -1: the CPUs this process may use (its
        affinity mask and cgroup CPU quota, see :func:`rebelboost.parallel.available_cpus`).
    verbose : int, default=0
        Print the training (and validation) loss every ``verbose`` iterations.
"""


def document_loop(cls=None, *, own: tuple[str, ...] = ()):
    """Class decorator: the loop's parameters replace ``{loop}`` in the class docstring,
    except those in ``own`` (documented by the class itself: another default)."""
    if cls is None:
        return lambda c: document_loop(c, own=own)
    entries = re.split(r"(?m)^(?=    \w+ : )", LOOP_PARAMETERS_DOC)
    kept = "".join(e for e in entries if e.split(" : ")[0].strip() not in own)
    cls.__doc__ = cls.__doc__.replace("{loop}\n", kept)
    return cls
