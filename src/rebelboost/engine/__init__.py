"""The boosting engine: one additive model (the prediction path) and one boosting loop."""

from .boosting import Booster, BoostResult, Stage, StageRun, boost
from .model import AdditiveModel

__all__ = ["AdditiveModel", "BoostResult", "Booster", "Stage", "StageRun", "boost"]
