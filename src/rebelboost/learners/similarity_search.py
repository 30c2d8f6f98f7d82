"""The search for one localized similarity per REBEL iteration (ICML 2017, section 5.2).

Both are real-valued, so a candidate is ranked by the convexity bound
``exp(f a) <= (1+f)/2 e^a + (1-f)/2 e^-a``: with ``V = w+ - w-`` (per sample and class),
``T = sum(w+ + w-)`` and ``D = f . V``, the bound's best loss is ``sum_k sqrt(T_k^2 - D_k^2)``
and its step ``a = 1/2 ln((T - D) / (T + D))``; the chosen step is then refined by Newton's
method on the exact per-class loss, which never ends above the bound.

The search per iteration (paper section 5.2): the constant learner; the best isolating point
(all N at once from ``V`` in O(NK)); then two-point learners towards the nearest points of the
opposite *binarized* group (signs of the top eigenvector of ``U^T U``, computed through the
K x K matrix ``U U^T``), removing the points each candidate covers, until none remain. Distances
come from BLAS matrix-vector products; no N x N matrix is formed.

How the candidates are ranked (our addition): a one-point learner is about -1 everywhere but
at its anchor, so on raw weights its score also credits it with the gain of a global bias step
(``D = 2 V_i - sum V``), which the constant learner should take. Ranked that way it wins almost
every iteration (865 of 1000 on the spiral), each step knocks the bias off again, and the model
becomes a memoriser (spiral test error 14%, loss still 0.36 after 1000 iterations). So the
non-constant candidates are ranked on the weights the exact constant step would leave (``V'``,
``T'``, with ``sum V' = 0``), by ``bound(T', f . V') / sum T'``, against the constant learner's own
ratio ``bound(T, sum V) / sum T``: each is credited with what it adds beyond a bias, and the
constant is chosen when the bias is what most needs fixing. The chosen learner's step is then
taken on the true weights as before, and if its bound misses the paper's rate
``1 - 2 / (K N^2)`` the candidate with the lowest true bound (which meets it) is used instead.
(Measured effects: BENCHMARKS.md, "Localized similarities".)

A constant step's search is not wasted (also ours): the weights it leaves are exactly the
``V'``, ``T'`` the other candidates were ranked on, so the next iteration takes the best of them
(:func:`fit_follow_up`: its step only, O(NK)) unless its bound misses the paper's rate there.
With ~40% of the iterations constant, this saves ~40% of the searches
(``benchmarks/similarity_follow_up.py``; figures in BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..losses.rebel import STEP_EPS, step_vector
from .similarity import CONSTANT, ONE_POINT, TWO_POINT, SimilarityArrays, two_point_output

_MAX_STEP = 0.5 * np.log(1.0 / STEP_EPS)  # the closed form's own cap on |a_k|


@dataclass
class SimilarityFit:
    """The learner chosen in one iteration."""

    arrays: SimilarityArrays  # the learner, as a stack of one
    output: np.ndarray  # f on the training rows
    vector: np.ndarray  # refined step a
    bound: float  # the convexity bound's loss, channels' scale
    loss: float  # exact loss after the refined step, channels' scale
    gains: tuple = ()  # no per-feature attribution for distances
    follow_up: Candidate | None = None  # set when the constant won: see fit_follow_up


@dataclass
class Candidate:
    """A learner the search considers, before its step."""

    kind: int
    first: np.ndarray  # x_i (zeros for the constant learner)
    first_index: int  # -1: none
    second: np.ndarray  # x_j (zeros unless two-point)
    tau: float
    second_index: int  # -1: none
    output: np.ndarray  # f on the training rows


def bound_loss(total: np.ndarray, D: np.ndarray) -> np.ndarray:
    """``sum_k sqrt(T_k^2 - D_k^2)`` for one D (K,) or many (m, K)."""
    return np.sqrt(np.maximum(total**2 - D**2, 0.0)).sum(axis=-1)


def binarize(V: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Signs (+-1) of the top eigenvector of ``U^T U``, ``U = V / sqrt(T)``, via the K x K one."""
    U = V / np.sqrt(np.maximum(total, 1e-300))
    _, vecs = np.linalg.eigh(U.T @ U)
    v = U @ vecs[:, -1]
    return np.where(v >= 0, 1.0, -1.0)


def refine_step(f: np.ndarray, w_plus: np.ndarray, w_minus: np.ndarray, a: np.ndarray,
                n_steps: int = 8) -> np.ndarray:
    """Safeguarded per-class Newton steps on ``sum_n w+ e^(f a) + w- e^(-f a)`` from ``a``."""
    return _refine(np.ascontiguousarray(f, dtype=np.float64), w_plus, w_minus,
                   np.asarray(a, dtype=np.float64), n_steps)[0]


def _refine(f, w_plus, w_minus, a, n_steps=8):
    """:func:`refine_step`, also returning the per-class loss at the refined step."""
    loss, grad, hess = _newton_sums(f, w_plus, w_minus, a)
    for _ in range(n_steps):
        step = np.where(hess > 0, grad / np.maximum(hess, 1e-300), 0.0)
        trial = np.clip(a - step, -_MAX_STEP, _MAX_STEP)
        t_loss, t_grad, t_hess = _newton_sums(f, w_plus, w_minus, trial)
        ok = np.isfinite(t_loss) & (t_loss <= loss)  # per class: keep only steps that help
        a = np.where(ok, trial, a)
        loss = np.where(ok, t_loss, loss)
        grad = np.where(ok, t_grad, grad)
        hess = np.where(ok, t_hess, hess)
        if not ok.any() or np.all(np.abs(step) <= 1e-9 * np.maximum(1.0, np.abs(a))):
            break
    return a, loss


@numba.njit(cache=True)
def _newton_sums(f, w_plus, w_minus, a):
    """Per class: loss, gradient and curvature of ``sum_n w+ e^(f a) + w- e^(-f a)`` at ``a``.

    Serial on purpose, like :func:`_margins`: a few ms of O(NK) work, and numba threads started
    right after a BLAS product fight its spinning threads (MNIST: 106 ms an iteration serial,
    120-130 ms parallel). ``|f| <= 1`` and ``|a| <= _MAX_STEP`` keep every exponential finite.
    """
    n, k = w_plus.shape
    sums = np.zeros((3, k))
    for r in range(n):
        fr = f[r]
        for j in range(k):
            e = np.exp(fr * a[j])
            up = w_plus[r, j] * e
            down = w_minus[r, j] / e
            sums[0, j] += up + down
            sums[1, j] += fr * (up - down)
            sums[2, j] += fr * fr * (up + down)
    return sums[0], sums[1], sums[2]


@numba.njit(cache=True)
def _margins(channels, growth, total):
    """``V = w+ - w-``, ``V`` after the bias step, and every point's isolating bound.

    Isolating point i is ``f = 2 delta_i - 1``, so ``D_i = 2 V_i - sum V`` and its bound is
    ``sum_k sqrt(T_k^2 - D_ik^2)``: all N in one pass.
    """
    n, k2 = channels.shape
    k = k2 // 2
    V = np.empty((n, k))
    V_b = np.empty((n, k))
    for r in range(n):
        for j in range(k):
            V[r, j] = channels[r, j] - channels[r, k + j]
            V_b[r, j] = channels[r, j] * growth[j] - channels[r, k + j] / growth[j]
    V_sum = V.sum(axis=0)
    iso = np.empty(n)
    for r in range(n):
        bound = 0.0
        for j in range(k):
            D = 2.0 * V[r, j] - V_sum[j]
            bound += np.sqrt(max(total[j] * total[j] - D * D, 0.0))
        iso[r] = bound
    return V, V_b, iso


class _Best:
    """The best candidate so far by one key (the first of equals wins)."""

    def __init__(self):
        self.key, self.item = np.inf, None

    def offer(self, key: float, item) -> None:
        if key < self.key:
            self.key, self.item = key, item


def two_point_candidates(X, sq_norms, i, gi, dist, active, weights, max_candidates, batch):
    """The paper's two-point loop from anchor ``i``: yields ``(j, f, f @ W for W in weights)``.

    Each candidate pairs ``x_i`` with the nearest still-``active`` point ``x_j`` (ties: lowest
    index); the points ``f <= f(x_j) / 2`` (x_j's side) then leave ``active``, which is updated
    in place. Candidates are computed in batches by one matrix product: the next ``batch``
    times as many still-active points as candidates are left (a pass over X costs as much as
    ~50 extra columns on MNIST); points an earlier one covers are skipped, so the sequence is
    that of the one-at-a-time loop.
    """
    pool = np.flatnonzero(active)
    queue = pool[np.argsort(dist[pool], kind="stable")]  # nearest first, ties by index
    head, tried = 0, 0
    while tried < max_candidates:
        take = []
        while head < queue.size and len(take) < batch * (max_candidates - tried):
            if active[queue[head]]:
                take.append(queue[head])
            head += 1
        if not take:
            return
        J = np.asarray(take)
        G = X[J] @ X.T  # (B, n): <x_j, x_n>, in X's precision
        F = two_point_output(sq_norms, gi, G, sq_norms[i], sq_norms[J, None], G[:, i, None])
        sums = [F @ W for W in weights]
        for b, j in enumerate(J):
            if not active[j]:  # covered by an earlier candidate of this batch
                continue
            f = F[b]
            yield (j, f, *(D[b] for D in sums))
            active &= f > f[j] / 2.0
            active[j] = False
            tried += 1
            if tried == max_candidates:
                return


def fit_similarity(
    X: np.ndarray, sq_norms: np.ndarray, channels: np.ndarray, *, one_point_only: bool = False,
    max_candidates: int = 32, tau_grid: int = 0, batch: float = 1.5,
) -> SimilarityFit:
    """Choose this iteration's localized similarity and its step from weights ``[w+, w-]``.

    ``X`` may be float32 (the estimator's choice for large data: the matrix products that
    dominate the search then move half the bytes); ``sq_norms`` and all sums are float64.
    At most ``max_candidates`` two-point learners are tried (the paper loops until no point
    is left; see :func:`two_point_candidates` for ``batch``).

    ``tau_grid`` > 0 also tries one-point balls out to the ``2**(tau_grid-1)``-th neighbour.
    Off by default: ranked as below, a wide ball is nearly collinear with the constant learner
    on the training rows and the two then alternate for hundreds of iterations (pendigits,
    2000 rows: training error 55% after 100 iterations with 6 radii, 3% with none).
    """
    n, k = channels.shape[0], channels.shape[1] // 2
    w_plus, w_minus, sums, total = _split(channels)
    zeros = np.zeros(X.shape[1])

    # The weights after the constant learner's exact step: non-constant candidates are ranked on
    # these, so that none is credited with the gain of a mere bias (see the module docstring).
    growth = np.exp(step_vector(sums[:k], sums[k:]))
    total_b = sums[:k] * growth + sums[k:] / growth
    V, V_b, iso = _margins(channels, growth, total)
    scale_b = 1.0 / max(float(total_b.sum()), 1e-300)
    scale = 1.0 / max(float(total.sum()), 1e-300)

    by_rank, by_bound, follow = _Best(), _Best(), _Best()

    def consider(c: Candidate, D, D_b):
        true = float(bound_loss(total, D))
        score = true * scale if c.kind == CONSTANT else float(bound_loss(total_b, D_b)) * scale_b
        by_rank.offer(score, (true, c, D))
        by_bound.offer(true, (true, c, D))
        if c.kind != CONSTANT:
            follow.offer(score, c)

    consider(Candidate(CONSTANT, zeros, -1, zeros, 0.0, -1, np.ones(n)), V.sum(0), None)

    if n >= 2:
        i = int(np.argmin(iso))
        x_i = X[i]
        gi = (X @ x_i).astype(np.float64)
        dist = np.maximum(sq_norms + sq_norms[i] - 2.0 * gi, 0.0)
        dist[i] = np.inf
        # One-point radii inside the nearest neighbour (isolation), and optionally wider balls.
        if tau_grid:
            order = np.argsort(dist, kind="stable")
            ranks = [0] + [min(2**r, n - 2) for r in range(tau_grid)]  # orders of the nearest
            radii = [dist[order[r]] for r in ranks]
        else:
            radii = [dist[np.argmin(dist)]]
        nearest = radii[0]
        if np.isfinite(nearest) and nearest > 0:
            dist_i = dist.copy()
            dist_i[i] = 0.0
            taus = {nearest / 16.0} | {r / 2.0 for r in radii if r > 0}
            for tau in sorted(taus):
                f = (tau - dist_i) / (tau + dist_i)
                consider(Candidate(ONE_POINT, x_i, i, zeros, tau, -1, f), f @ V, f @ V_b)

        if not one_point_only:
            groups = binarize(V, total)
            active = (groups == -groups[i]) & np.isfinite(dist) & (dist > 0)
            for j, f, D, D_b in two_point_candidates(X, sq_norms, i, gi, dist, active, (V, V_b),
                                                     max_candidates, batch):
                consider(Candidate(TWO_POINT, x_i, i, X[j], 0.0, j, f), D, D_b)

    # The best by rank, unless its bound misses the paper's guaranteed rate: then the lowest
    # true bound, which the isolating learner guarantees meets it.
    true, best, D = by_rank.item
    if true > _rate(k, n) * float(total.sum()):
        true, best, D = by_bound.item
    fit = _finish(best, D, true, w_plus, w_minus, total)
    if best.kind == CONSTANT:
        fit.follow_up = follow.item
    return fit


def fit_follow_up(follow_up: Candidate, channels: np.ndarray) -> SimilarityFit | None:
    """The learner a constant step's search ranked best for the weights that step leaves.

    Those weights are ``channels`` now (up to scale), so the candidate's output is reused and
    only its step is computed, in O(NK) instead of a search. None if its bound misses the
    paper's rate on these weights (then search afresh).
    """
    w_plus, w_minus, _, total = _split(channels)
    D = follow_up.output @ (w_plus - w_minus)
    true = float(bound_loss(total, D))
    if not true <= _rate(len(total), len(channels)) * float(total.sum()):
        return None
    return _finish(follow_up, D, true, w_plus, w_minus, total)


def _split(channels: np.ndarray):
    """``w+``, ``w-`` (views), the per-channel sums and the per-class totals ``T``."""
    k = channels.shape[1] // 2
    sums = channels.sum(0)
    return channels[:, :k], channels[:, k:], sums, sums[:k] + sums[k:]


def _rate(k: int, n: int) -> float:
    """The paper's guaranteed loss ratio per iteration, ``1 - 2 / (K N^2)``."""
    return 1.0 - 2.0 / (k * n * n)


def _finish(c: Candidate, D, true, w_plus, w_minus, total) -> SimilarityFit:
    """The chosen candidate's step (closed-form bound, then Newton) and its stored form."""
    f = np.ascontiguousarray(c.output)
    a = step_vector((total + D) / 2.0, (total - D) / 2.0)
    a, class_loss = _refine(f, w_plus, w_minus, a)
    arrays = SimilarityArrays(
        np.array([c.kind], np.int8), np.asarray(c.first, np.float64)[None].copy(),
        np.asarray(c.second, np.float64)[None].copy(), np.array([c.tau]),
        np.array([c.first_index], np.int64), np.array([c.second_index], np.int64),
    )
    return SimilarityFit(arrays, f, a, float(true), float(class_loss.sum()))
