"""Reproductions of the papers' experiments, one module per experiment.

Each module exposes ``run(out_dir, quick=False, echo=print) -> ExperimentResult``: it writes its
figures and a markdown/CSV table into ``out_dir`` and reports the papers' claims it checked.
``quick=True`` shrinks the experiment to seconds (used by the tests) while still checking the
claim in a tolerant form.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: name -> (module, what it reproduces)
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "boundaries": ("boundaries", "ICML 2017 fig 1: stumps vs localized similarities in 2-D"),
    "spiral": ("spiral", "ICML 2017 figs 2-3: the 3-class spiral, 1000 iterations"),
    "robustness": ("robustness", "ICML 2017 figs 4-5: sparse and mislabeled training data"),
    "uci-curves": ("uci_curves", "ICML 2017 figs 6-7: training curves and loss on UCI sets"),
    "benchmark": ("benchmark", "ICML 2017 figs 8-9, thesis fig 1.2: test errors vs SVM, MLP"),
    "cost-sensitive": ("cost_sensitive",
                       "REBEL fig 3: cost-sensitive REBEL vs the two-step approach"),
    "cost-boundaries": ("cost_boundaries", "REBEL fig 7: boundaries under four cost matrices"),
    "quickboost": ("quickboost", "thesis ch. 3: QuickBoost work and time vs exhaustive search"),
}


@dataclass
class ExperimentResult:
    """What a reproduction produced and which of the paper's claims held."""

    name: str
    files: list[Path] = field(default_factory=list)
    table: str = ""  # markdown
    claims: dict[str, bool] = field(default_factory=dict)  # the claim, in words -> held?

    @property
    def ok(self) -> bool:
        return all(self.claims.values())


def run_experiment(name: str, out_dir: str | Path, quick: bool = False,
                   echo: Callable[[str], None] = print) -> ExperimentResult:
    """Run one reproduction by its name in :data:`EXPERIMENTS`."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    module = importlib.import_module(f"{__name__}.{EXPERIMENTS[name][0]}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return module.run(out, quick=quick, echo=echo)
