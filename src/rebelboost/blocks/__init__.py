"""Training on row blocks that live elsewhere (workers of a cluster), backend-neutral: the
blocks' pure tasks (:mod:`.tasks`) and the client's row set and booster (:mod:`.training`).
A backend supplies an :class:`~.training.Executor` (Dask's: :mod:`rebelboost.dask`)."""
