"""``DaskRebelClassifier``: REBEL's vector-leaf trees fitted on Dask collections.

The rows never leave the workers: each bins and keeps its own partitions, builds the
histograms of its rows, and a fixed-order tree reduction adds them up for the one split search
on the client (:mod:`rebelboost.blocks`). The data are read and binned by ordinary Dask tasks
(:mod:`._cluster`); the trees grow on one actor per worker holding its blocks, called
directly (:mod:`._actors`; no sockets of our own). Every task is a pure function: a worker
that dies mid-fit takes its actor's blocks with it, and the trees start again on ordinary
tasks, which Dask recomputes from the partitions' lineage, so the fit completes with the same
model, or fails with Dask's ``KilledWorker`` error when the same task has killed workers too
often.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ..binning import Binner
from ..blocks import tasks as part_fn
from ..blocks.training import BlockRebelBooster
from ..categorical import CategoricalColumns, part_levels
from ..costs import check_costs, check_decisions, check_sample_cost, class_mean_costs
from ..engine import boost
from ..engine.boosting import Validation
from ..ensemble._base import _rng, check_held_weight, validation_rows
from ..ensemble._cost_route import scale_to_final
from ..ensemble.rebel import RebelClassifier
from ..exact_sums import rounded
from ..losses.rebel import RebelLoss
from ..search.quantize import merge_weight_ranges
from ._actors import ActorExecutor, WorkerLost
from ._cluster import Cluster
from ._peers import PeerBoosters
from .cross_fit import choose_route_on_workers

#: The partitions are concatenated into this many blocks per worker, consecutive partitions
#: together (so the order of additions is fixed by the data, not by where Dask put it): each
#: split then costs a few Dask tasks per worker instead of a few per partition. None: every
#: partition stays a block of its own.
BLOCKS_PER_WORKER: int | None = 1

#: The trees' rounds of splits go to one actor per worker, called directly
#: (:mod:`._actors`), instead of through the scheduler's tasks; a worker lost mid-fit then
#: costs a new fit on tasks (the same model). False: tasks only.
ROUNDS_ON_ACTORS = True

#: With the rounds on actors, the actors grow each tree themselves, exchanging their sums
#: with one another (:mod:`._peers`: one call from the client a tree); False: the client
#: drives every level of splits (a call to every actor a level). The same model.
TREES_ON_WORKERS = True


class DaskRebelClassifier(RebelClassifier):
    """:class:`~rebelboost.RebelClassifier` on ``dask.array`` / ``dask.dataframe`` data.

    Same parameters (plus ``client``, the ``distributed.Client`` to run on; None: the default
    client), fitted attributes and model files as the local estimator, and on the same data
    the same model: the same splits and labels, scores and training loss equal up to the
    order of floating-point additions (about 1e-15 relative); with ``histogram_bits`` (integer
    histograms, exact sums: :mod:`rebelboost.exact_sums`) the same model file, bit for bit,
    on any partitioning. :meth:`to_local` gives the plain
    estimator; ``predict``, ``predict_proba`` and ``decision_function`` of Dask collections
    return Dask arrays, computed partition by partition (NumPy input is scored in memory).

    The distributed fit grows vector-leaf trees (``weak_learner='vector_tree'``, the
    default) on all rows, a uniform sample (``subsample``; the client draws each tree's
    rows as the local fit draws them and sends a bit mask) or GOSS's (``sampling='goss'``:
    the heaviest rows' threshold found from the blocks' counts of their weights in two or
    three round trips, the rest drawn on the client; :mod:`~..learners.row_sampling`);
    ``colsample_bytree`` works,
    takes the local fit's cost routes: with a ``cost_matrix`` (K x K, or K x M with
    ``decisions``) the default 'posterior' and 'auto' routes are cross-fitted on the workers
    (:mod:`.cross_fit`: fold models fitted there, the calibration and guard on the rows'
    codes and out-of-fold scores on the client; per-row ``sample_cost`` too, whose rows then
    come to the client), and ``cost_strategy='loss'`` trains on the costs; it splits
    categorical columns as the local fit does (``categorical_features``; each column's
    values are gathered from every partition first, so codes and bins are those of a local
    fit on all rows), and stops early on an ``eval_set`` or, without one, on the rows a
    local fit would hold out (``validation_fraction``: drawn on the client from the rows'
    classes, those rows then brought to the client and scored there after every
    iteration; the trees grow on the rest): other settings raise ``NotImplementedError``
    before any work is done. The
    trees grow on the workers (:data:`TREES_ON_WORKERS`): each worker's actor runs the
    same grower on its own blocks and the actors send one another their sums, adding them
    in the blocks' fixed order (:mod:`._peers`), so a tree costs the client one call to
    each actor (``round_trips_``, per tree) and the workers one exchange per level of
    splits (one more where a leaf's histogram is asked on its own), not one per split, and
    2 more for the weights and root histogram (one more with ``histogram_bits``, whose
    scales wait for the weights; three more with GOSS, whose heaviest rows' threshold is
    found in passes over the blocks' counts): ``exchanges_``, per tree, and
    ``exchanged_bytes_``. With ``TREES_ON_WORKERS = False`` the client drives every level,
    a call to every actor each (:class:`~rebelboost.blocks.training.BlockRows`;
    ``round_trips_`` then counts the levels, the weights' 2-5 calls not counted there; no
    exchanges: ``exchanges_`` zeros). While the
    trees grow, workers started by Dask's nannies take arrays up to 32 MiB from the heap
    (:mod:`rebelboost._malloc`; never where ``MALLOC_MMAP_THRESHOLD_`` is set).
    """

    _parameter_constraints: dict = {**RebelClassifier._parameter_constraints,
                                    "client": "no_validation"}

    def __init__(self, n_estimators: int | None = None, *, client=None, **params):
        super().__init__(n_estimators, **params)
        self.client = client

    # scikit-learn reads an estimator's parameters from its signature: the local one's plus
    # the client.
    __init__.__signature__ = inspect.Signature([
        *inspect.signature(RebelClassifier.__init__).parameters.values(),
        inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, default=None),
    ])

    def __sklearn_clone__(self):
        """An unfitted copy on the same client (scikit-learn would deep-copy the client)."""
        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False)
                                            for k, v in params.items()})

    def __getstate__(self):
        """Pickled without the client (a connection): unpickled, it uses the default one."""
        return {**super().__getstate__(), "client": None}

    # ------------------------------------------------------------------ fitting

    def fit(self, X, y, sample_weight=None, callbacks=None, sample_cost=None, *,
            eval_set=None, eval_sample_weight=None) -> DaskRebelClassifier:
        """Boost on Dask collections: ``X`` a ``dask.array`` (n, d) or ``dask.dataframe``,
        ``y``, ``sample_weight`` and ``sample_cost`` (n, K: each row's cost of predicting each
        class, on the 'loss' route) partitioned like it (Dask arrays, Series or DataFrames).

        ``eval_set`` (an ``(X, y)`` pair of Dask or NumPy/pandas data) and
        ``eval_sample_weight`` are brought to the client and scored there after every
        iteration, as the local fit scores them; with ``early_stopping`` on, training stops
        on them (the same model as a local fit given the same eval set). Without one,
        ``early_stopping`` holds out the rows a local fit on all rows would (the same
        model as that fit), and they come to the client: ``validation_fraction`` of the
        data must fit in its memory."""
        self._validate_params()
        self._check_distributed()
        from distributed import default_client

        cluster = Cluster(self.client or default_client())
        parts = _partition_inputs(X, y, sample_weight, sample_cost)
        self._fit_parts(cluster, *parts, callbacks, eval_set, eval_sample_weight,
                        numeric=_numeric_dtypes(X))
        self.__dict__.pop("_held_out", None)
        return self

    def _fit_parts(self, cluster: Cluster, x_parts: list, y_parts: list, w_parts: list,
                   c_parts: list, names: list, callbacks=None, eval_set=None,
                   eval_sample_weight=None, numeric: bool = False) -> DaskRebelClassifier:
        """:meth:`fit` on partitions (delayed objects or futures of their blocks); a cost
        route's fold models are fitted through it too (:mod:`.cross_fit`). ``numeric``:
        X is a numeric Dask array, so ``'from_dtype'`` names no column and the partitions
        need not be read first for their category values."""
        from distributed import wait

        client = cluster.client
        has_cost = any(c is not None for c in c_parts)
        d = len(names)
        columns = None
        # each block's partitions are read and checked on the worker that will hold them:
        # no raw partition moves, and no worker holds more than its share
        groups, placement = _blocks_per_worker(cluster, len(x_parts), BLOCKS_PER_WORKER)
        from_dtype = isinstance(self.categorical_features, str)  # ('from_dtype': checked)
        if self.categorical_features is not None and not (from_dtype and numeric):
            # category values agreed by all partitions
            x_parts = _compute_on(cluster, x_parts, groups, placement)
            columns = CategoricalColumns.merge(
                client.gather(cluster.map(part_levels, x_parts, self.categorical_features)),
                names if all(isinstance(n, str) for n in names) else None)
        raw = _compute_on(cluster, [_delayed(part_fn.check_partition)(x, yp, w, d, i, c, columns)
                                   for i, (x, yp, w, c) in enumerate(
                                       zip(x_parts, y_parts, w_parts, c_parts, strict=True))],
                          groups, placement)
        del x_parts
        self._set_categorical(columns)
        facts = client.gather(cluster.map(part_fn.facts, raw))
        classes = _classes(facts)
        n_rows = sum(f["n_rows"] for f in facts)
        if n_rows < 2:
            raise ValueError(f"the training set has {n_rows} row(s); at least 2 are needed")
        exact = self.histogram_bits is not None  # exact sums: the local model, bit for bit
        weight_total = rounded(functools.reduce(np.add, [f["weight_sum"] for f in facts]))
        if weight_total <= 0:
            raise ValueError("sample_weight sums to zero: no sample would count")
        self.classes_ = classes
        self.n_features_in_ = d
        if all(isinstance(n, str) for n in names):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        k = len(classes)
        if not has_cost:
            self.cost_matrix_, self.decisions_ = check_costs(self.cost_matrix, self.decisions,
                                                             k, classes)
        elif self.cost_matrix is not None:
            raise ValueError("give either cost_matrix or sample_cost, not both")
        else:  # the mean cost row of each true class, as in a local fit
            self.decisions_ = check_decisions(self.decisions)
            sums, counts = functools.reduce(
                lambda a, b: (a[0] + b[0], a[1] + b[1]),
                client.gather(cluster.map(part_fn.cost_sums, raw, classes,
                                          None if self.decisions_ is None
                                          else len(self.decisions_))))
            self.cost_matrix_ = class_mean_costs(sums, counts)
        self._resolve_size(n_rows)
        rng = _rng(self.random_state)  # drawn from as the local fit draws
        choose_route_on_workers(self, cluster, raw, facts, rng, has_cost).set_on(self)
        trained_costs = (self.cost_matrix_ if self.cost_strategy_ == "loss"
                         else 1.0 - np.eye(k))  # the posterior route trains cost-neutrally
        validation = None
        if eval_set is not None:  # held by the client, scored there as a local fit does
            import dask

            pairs = eval_set if isinstance(eval_set, list) else [eval_set]
            validation = self._validation(
                [tuple(dask.compute(*pair)) if isinstance(pair, tuple) else pair
                 for pair in pairs], dask.compute(eval_sample_weight)[0])
        elif self._early_stopping_on(n_rows):  # the local fit's held-out rows, to the client
            raw, validation, held = _hold_out(cluster, raw, self, trained_costs, rng)
            self._held_out = held  # (a fold model's: the rows its scores are sized on, cross_fit)
            facts = client.gather(cluster.map(part_fn.facts, raw))
            n_rows = sum(f["n_rows"] for f in facts)
            weight_total = rounded(functools.reduce(np.add, [f["weight_sum"] for f in facts]))
        n_positive = [f["n_positive"] for f in facts]
        binner = _fit_binner(cluster, raw, facts, n_positive, self.resolved_params_["max_bins"],
                             rng.randint(2**31), None if columns is None else columns.mask,
                             classes, self.min_data_in_bin)
        blocks = [cluster.submit(part_fn.bin_block, raw[a:b], binner, classes,
                                 self.cost_strategy_ == "loss", worker=worker)
                  for (a, b), worker in zip(groups, placement, strict=True)]
        wait(blocks)
        # the raw rows are dropped before the training state is made, unless the route's
        # calibration waits for the final model's scores on them (scale_to_final)
        sized_on = raw if self.__dict__.pop("_scale_pending", False) else None
        del raw
        parts = cluster.map(part_fn.make_partition, blocks, k, trained_costs, self.subcosts,
                            weight_total, exact)
        wait(parts)
        del blocks
        block_rows = [sum(f["n_rows"] for f in facts[a:b]) for a, b in groups]
        target = 1.0 / n_rows if self.target_loss == "auto" else self.target_loss
        seed = rng.randint(2**31)
        n_iterations = self._n_iterations()

        def train(executor, blocks, on_peers=False):
            booster = None
            validation_loss = None if validation is None else RebelLoss(
                None, validation.codes, validation.sample_weight, self.subcosts,
                validation.cost_rows)
            options = self._vector_tree_options()
            make = functools.partial(
                BlockRebelBooster, binner=binner_value, n_rows=n_rows, n_classes=k,
                options=options, rng=np.random.RandomState(seed),
                learning_rate=self._shrinkage(),
                block_starts=np.cumsum([0] + block_rows[:-1]).tolist(),
                weight_range=functools.reduce(merge_weight_ranges,
                                              [f["weight_range"] for f in facts]),
                n_trees=n_iterations)
            try:
                booster = (PeerBoosters(executor, make, options.max_leaves, validation_loss)
                           if on_peers else
                           make(executor, blocks, validation_loss=validation_loss))
                result = boost(booster, n_iterations, d, validation=validation,
                               early_stopping=self._early_stopping(validation is not None),
                               callbacks=callbacks, target_loss=target,
                               verbose=self.verbose, n_jobs=self.n_jobs, estimator=self)
                return booster, result, booster.covers()
            finally:
                if booster is not None:
                    booster.release()

        binner_value = cluster.gather(binner)

        def on_actors(blocks):
            actors = ActorExecutor(cluster, blocks)
            try:
                return train(actors, actors.blocks, TREES_ON_WORKERS)
            finally:
                actors.close()

        cluster.training_allocation(True)
        try:
            if ROUNDS_ON_ACTORS:
                try:
                    booster, result, covers = on_actors(parts)
                except WorkerLost as lost:
                    # the worker's blocks died with its actor: the fit starts again on
                    # tasks, which Dask recomputes from the partitions' lineage
                    warnings.warn(f"{lost}: the trees are grown again, on Dask tasks (the "
                                  "same model)", RuntimeWarning, stacklevel=3)
                    booster, result, covers = train(cluster, parts)
            else:
                booster, result, covers = train(cluster, parts)
        finally:
            cluster.training_allocation(False)
        del parts
        self._set_result(result)
        self.model_.covers = covers[:len(self.model_.learners)]
        self._set_records(result.records, result.n_kept, booster)
        if sized_on is not None:  # (the margins of every row, in the local fit's order)
            local = self.to_local()
            scale_to_final(self, np.concatenate(cluster.gather(
                [cluster.submit(part_fn.score_margins, part, None, local, True)
                 for part in sized_on])))
        self.gathered_bytes_ = cluster.gathered_bytes
        n_trees = len(self.model_.learners)
        self.round_trips_ = np.asarray(booster.round_trips[:n_trees])
        # (driven by the client, the blocks' sums are added on the client, no exchange)
        self.exchanges_ = np.asarray(getattr(booster, "exchanges", [0] * n_trees)[:n_trees])
        self.exchanged_bytes_ = getattr(booster, "exchanged_bytes", 0)
        return self

    def _check_distributed(self) -> None:
        problems = []
        if self.weak_learner != "vector_tree":
            problems.append(f"weak_learner={self.weak_learner!r} (only 'vector_tree')")
        if problems:
            raise NotImplementedError("the distributed fit does not support "
                                      + "; ".join(problems))

    def to_local(self) -> RebelClassifier:
        """The plain :class:`~rebelboost.RebelClassifier` with this model."""
        check_is_fitted(self)
        params = self.get_params(deep=False)
        del params["client"]
        local = RebelClassifier(**params)
        for name, value in vars(self).items():
            if (name.endswith("_") and not name.startswith("_")
                    and name not in ("gathered_bytes_", "round_trips_", "exchanges_",
                                     "exchanged_bytes_")):
                setattr(local, name, value)
        local._categorical = getattr(self, "_categorical", None)
        return local

    def to_dict(self) -> dict:
        """The local estimator's model file: ``load_model`` gives a RebelClassifier."""
        return self.to_local().to_dict()

    # --------------------------------------------------------------- prediction

    def predict(self, X, **kwargs):
        """Labels; a Dask array for Dask input (see :meth:`RebelClassifier.predict`)."""
        blocks, columns = self._blocks(X)
        if blocks is None:
            return super().predict(X, **kwargs)
        return blocks.map_blocks(_call, self.to_local(), "predict", kwargs, columns,
                                 drop_axis=1, dtype=self.classes_.dtype)

    def predict_proba(self, X, **kwargs):
        blocks, columns = self._blocks(X)
        if blocks is None:
            return super().predict_proba(X, **kwargs)
        return blocks.map_blocks(_call, self.to_local(), "predict_proba", kwargs, columns,
                                 chunks=(blocks.chunks[0], (len(self.classes_),)),
                                 dtype=np.float64)

    def decision_function(self, X, **kwargs):
        blocks, columns = self._blocks(X)
        if blocks is None:
            return super().decision_function(X, **kwargs)
        if len(self.classes_) == 2:
            return blocks.map_blocks(_call, self.to_local(), "decision_function", kwargs,
                                     columns, drop_axis=1, dtype=np.float64)
        return blocks.map_blocks(_call, self.to_local(), "decision_function", kwargs, columns,
                                 chunks=(blocks.chunks[0], (len(self.classes_),)),
                                 dtype=np.float64)

    def _blocks(self, X):
        """X's rows as a Dask array with one column chunk, and the column names of a
        DataFrame X (``(None, None)``: X is not a Dask collection)."""
        import dask.array as da
        import dask.dataframe as dd

        check_is_fitted(self)
        columns = None
        if isinstance(X, dd.DataFrame):
            names = getattr(self, "feature_names_in_", None)
            if names is not None and list(X.columns) != list(names):
                raise ValueError(f"X has columns {list(X.columns)}, the model was fitted on "
                                 f"{list(names)}")
            columns = list(X.columns)
            X = X.to_dask_array()
        elif not isinstance(X, da.Array):
            return None, None
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have {self.n_features_in_} columns, got shape {X.shape}")
        return _one_column_chunk(X), columns


def _one_column_chunk(a):
    """A 2-d Dask array chunked along rows only (each block holds whole rows)."""
    return a.rechunk({1: -1}) if a.numblocks[1] > 1 else a


def _call(block, model, method, kwargs, columns):
    """``model.method(block)``; ``columns``: the names of a DataFrame's columns."""
    empty = block.shape[0] == 0  # scikit-learn's checks refuse 0 rows
    if empty:
        block = np.zeros((1, block.shape[1]))
    if columns is not None:
        import pandas as pd

        block = pd.DataFrame(block, columns=columns)
    out = getattr(model, method)(block, **kwargs)
    return out[:0] if empty else out


def _delayed(func):
    from dask import delayed

    return delayed(func, pure=False)


def _partition_inputs(X, y, sample_weight, sample_cost):
    """Delayed partitions of X, y, the weights and the costs (None each when not given), and
    the feature names (column indices for an array). Their graphs are not optimised apart:
    X and y made from the same source (one DataFrame's columns, or y computed from X) share
    its tasks, so each partition of the source is read or computed once, not once each."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, dd.DataFrame):
        names = list(X.columns)
        x_parts = X.to_delayed(optimize_graph=False)
        row_chunks = None
    elif isinstance(X, da.Array):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d, got {X.ndim} dims")
        X = _one_column_chunk(X)
        names = list(range(X.shape[1]))
        x_parts = X.to_delayed(optimize_graph=False).ravel().tolist()
        row_chunks = X.chunks[0]
    else:
        raise TypeError(f"X must be a dask array or DataFrame, got {type(X).__name__}; "
                        "for data in memory use rebelboost.RebelClassifier")
    parts = [x_parts]
    for what, v in (("y", y), ("sample_weight", sample_weight), ("sample_cost", sample_cost)):
        if v is None and what != "y":
            parts.append([None] * len(x_parts))
            continue
        if isinstance(v, dd.DataFrame | dd.Series):
            v_parts = v.to_delayed(optimize_graph=False)
        elif isinstance(v, da.Array):
            if row_chunks is not None and not np.isnan(v.shape[0]) and not np.isnan(
                    sum(row_chunks)) and v.shape[0] != sum(row_chunks):
                raise ValueError(f"{what} has {v.shape[0]} rows, X {sum(row_chunks)}; X and "
                                 f"{what} must be partitioned alike")
            if row_chunks is not None and v.chunks[0] != row_chunks and not any(
                    np.isnan(c) for c in row_chunks + v.chunks[0]):
                v = v.rechunk({0: row_chunks})
            if v.ndim == 2:
                v = _one_column_chunk(v)
            v_parts = v.to_delayed(optimize_graph=False).ravel().tolist()
        else:
            raise TypeError(f"{what} must be a dask array or Series like X, got "
                            f"{type(v).__name__}")
        if len(v_parts) != len(x_parts):
            raise ValueError(f"{what} has {len(v_parts)} partitions, X {len(x_parts)}; "
                             "partition them alike")
        parts.append(v_parts)
    return parts[0], parts[1], parts[2], parts[3], names


def _blocks_per_worker(cluster: Cluster, n_parts: int, per_worker: int | None
                       ) -> tuple[list[tuple[int, int]], list[str | None]]:
    """Blocks of consecutive partitions, ``per_worker`` per worker: each block's partitions
    ``[a, b)`` and the worker it is placed on while that worker lives (block i on worker i,
    in address order; None: anywhere, one partition a block)."""
    workers = cluster.workers()
    if per_worker is None or not workers or n_parts <= per_worker * len(workers):
        return [(i, i + 1) for i in range(n_parts)], [None] * n_parts
    n_blocks = per_worker * len(workers)
    edges = np.linspace(0, n_parts, n_blocks + 1).round().astype(int)
    groups = list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))
    return groups, [workers[i % len(workers)] for i in range(len(groups))]


def _numeric_dtypes(X) -> bool:
    """Whether ``X`` is a Dask array of a NumPy numeric or boolean dtype (from its metadata:
    nothing is computed). A DataFrame's partitions are read however its metadata reads: a
    partition may hold text where the metadata says numbers (an error that names both)."""
    return not hasattr(X, "columns") and X.dtype.kind in "biuf"


def _compute_on(cluster: Cluster, parts: list, groups: list[tuple[int, int]],
                placement: list) -> list:
    """Futures of ``parts`` (delayed objects or futures), each block's computed on its
    worker (:func:`_blocks_per_worker`; :meth:`~._cluster.Cluster.compute_placed`)."""
    return cluster.compute_placed([(parts[a:b], worker)
                                   for (a, b), worker in zip(groups, placement, strict=True)])


def _classes(facts: list[dict]) -> np.ndarray:
    kinds = {f["label_kind"] for f in facts if f["label_kind"] is not None}
    if len({"U" if k in "US" else "O" if k == "O" else "n" for k in kinds}) > 1:
        raise ValueError("y mixes label types across partitions (strings and numbers); use "
                         "one type for every label, for example y.astype(str)")
    labels = [f["labels"] for f in facts if len(f["labels"])]
    classes = np.unique(np.concatenate(labels)) if labels else np.empty(0)
    if len(classes) < 2:
        raise ValueError(f"y has {len(classes)} class(es) {classes.tolist()}; classification "
                         "needs at least 2 classes")
    return classes


def _hold_out(cluster: Cluster, raw: list, model: DaskRebelClassifier,
              trained_costs: np.ndarray, rng) -> tuple[list, Validation, np.ndarray]:
    """The partitions' rows that a local fit on all of them holds out for early stopping
    (:func:`~rebelboost.ensemble._base.validation_rows`, the same draw from ``rng`` on the
    rows' class codes, a byte a row): the kept rows stay where they are (futures, in
    order), the held-out ones come to the client in the local fit's order, scored there
    after every iteration; and the mask of the held-out rows."""
    classes, k = model.classes_, len(model.classes_)
    pieces = cluster.gather(cluster.map(part_fn.class_codes, raw, classes))
    held = validation_rows(np.concatenate(pieces), model.validation_fraction, rng)
    starts = np.cumsum([0] + [len(c) for c in pieces])
    split = [cluster.submit(part_fn.hold_out, part, held[a:b])
             for part, a, b in zip(raw, starts[:-1], starts[1:], strict=True)]
    kept, out = cluster.unpack(split, 2)
    out = cluster.gather(out)
    weight = np.concatenate([r.weight for r in out])
    check_held_weight(weight)
    codes = np.searchsorted(classes, np.concatenate([r.y for r in out])).astype(np.intp)
    cost_rows = trained_costs[codes]
    if model.cost_strategy_ == "loss" and out[0].cost is not None:  # per-row costs
        cost_rows = check_sample_cost(np.concatenate([r.cost for r in out]), codes, k,
                                      None if model.decisions_ is None
                                      else len(model.decisions_))
    return kept, Validation(np.concatenate([r.X for r in out]), codes, weight, cost_rows), held


def _fit_binner(cluster: Cluster, raw: list, facts: list[dict], n_positive: list[int],
                max_bins: int, seed: int, categorical: np.ndarray | None, classes: np.ndarray,
                min_data_in_bin: int):
    """The binner of the local fit, from the value counts of the same sampled rows (drawn by
    their index among all rows of positive weight; ``n_positive`` per partition) and the
    ``categorical`` features' rows per code and class, each merged in a tree; a future."""
    rows = Binner(max_bins, random_state=seed).sample_rows(int(sum(n_positive)))
    offsets = np.concatenate([[0], np.cumsum(n_positive)])
    summaries = []
    for i, r in enumerate(raw):
        mine = None
        if rows is not None:
            mine = rows[(rows >= offsets[i]) & (rows < offsets[i + 1])] - offsets[i]
        summaries.append(cluster.submit(part_fn.sample_summary, r, mine, categorical))
    while len(summaries) > 2:  # the last two are merged feature by feature by fit_binner
        summaries = cluster.reduce_level(part_fn.merge_summaries, summaries)
    has_missing = np.logical_or.reduce([f["has_missing"] for f in facts])
    has_values = np.logical_or.reduce([f["has_values"] for f in facts])
    codes = None if categorical is None else cluster.reduce(
        part_fn.merge_code_summaries, cluster.map(part_fn.code_summary, raw, categorical,
                                                  classes))
    return cluster.submit(part_fn.fit_binner, summaries, max_bins, has_missing, has_values,
                          categorical, codes, min_data_in_bin)
