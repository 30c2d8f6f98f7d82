"""rebelboost: multi-class, cost-sensitive boosting that is accurate, fast and white-box.

The estimators and functions below are imported on first use, so that ``rebelboost --help``
does not pay for scikit-learn and numba.
"""

import os
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from ._kernel_cache import refresh
from ._version import __version__

# Idle OpenMP threads spin only briefly, then sleep (rebelboost.parallel says why); read when
# libgomp loads. The user's own wait policy or spin count wins.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "1000"
# Compiled kernels cached from other sources than these are dropped before any is loaded.
refresh(Path(__file__).parent)

if TYPE_CHECKING:
    from .ensemble import (
        AdaBoostMHClassifier,
        MCBoostClassifier,
        OneVsAllAdaBoostClassifier,
        RebelClassifier,
        load_model,
    )
    from .metrics import mean_cost
    from .shap_export import shap_explanation, to_shap

_HOMES = {
    "AdaBoostMHClassifier": ".ensemble",
    "MCBoostClassifier": ".ensemble",
    "OneVsAllAdaBoostClassifier": ".ensemble",
    "RebelClassifier": ".ensemble",
    "load_model": ".ensemble",
    "mean_cost": ".metrics",
    "shap_explanation": ".shap_export",
    "to_shap": ".shap_export",
}
__all__ = [
    "AdaBoostMHClassifier",
    "MCBoostClassifier",
    "OneVsAllAdaBoostClassifier",
    "RebelClassifier",
    "__version__",
    "load_model",
    "mean_cost",
    "shap_explanation",
    "to_shap",
]


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
