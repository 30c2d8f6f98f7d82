"""Trees grown on the workers: every worker's actor runs the same booster and tree grower on
its own blocks, and the actors add up their sums by sending them to one another.

A round of splits driven from the client costs a call to every actor and back for each level
of a tree (7-11 at 20M rows and 31 leaves), and the client gathers every histogram and
searches it while the workers wait. Here the client calls each actor once a tree. Each actor
runs :class:`~rebelboost.blocks.training.BlockRebelBooster` over a :class:`PeerExecutor`,
whose values are this worker's blocks' and whose gathers and reductions are exchanges with
the other actors: every actor receives every block's answer, adds them in the blocks' fixed
order (the pairs :class:`~rebelboost.blocks.training.TreeReductions` adds) and so takes the
same decisions from the same numbers as the others and as a client would. The model is the
client-driven fit's, bit for bit.

An exchange waits for the other actors (:class:`Mailbox`). When a worker dies, the client's
call to it fails; the client then tells the others to stop waiting (:meth:`PeerBoosters.abort`)
and raises :class:`~rebelboost.dask._actors.WorkerLost`, as a client-driven round would.
"""

from __future__ import annotations

import threading
import time
from itertools import count

import numpy as np

from ..blocks.training import TreeReductions, _pairs, finish_reduce, nbytes
from ..learners.leaf_tree import LeafTreeArrays
from ._actors import WorkerLost, _flatten, _unflatten

#: seconds an actor waits for another's part of an exchange before it gives up (a worker
#: that died is reported sooner: by the client, whose call to it fails)
EXCHANGE_TIMEOUT = 3600.0


class Part:
    """A block's value in a :class:`PeerExecutor`: ``value`` where this worker holds the
    block (``owner``), None on the other workers."""

    __slots__ = ("owner", "value")

    def __init__(self, owner: int, value=None):
        self.owner, self.value = owner, value


class PeerExecutor(TreeReductions):
    """The booster's tasks on one worker among peers that all run the same program: a task
    on a block runs where the block is; a gather or reduction is an exchange after which
    every worker holds the same value. ``exchange(mine)``: this worker's values by place,
    merged with every other worker's."""

    def __init__(self, me: int, owners: list[int], held: dict, exchange):
        self.me = me
        self.blocks = [Part(owner, held[i] if owner == me else None)
                       for i, owner in enumerate(owners)]
        self._exchange = exchange
        self.gathered_bytes = 0  # received from the other workers
        self.exchanges = 0

    def submit(self, func, *args, worker=None):
        """``func(*args)`` where the block of its :class:`Part` arguments is (on every
        worker alike when it has none)."""
        parts = [a for a in args if type(a) is Part]
        if not parts:
            return func(*args)
        owner = parts[0].owner
        if any(p.owner != owner for p in parts):
            raise RuntimeError("a task reads blocks of two workers")
        if owner != self.me:
            return Part(owner)
        return Part(owner, func(*[a.value if type(a) is Part else a for a in args]))

    def reduce(self, func, futures):
        return finish_reduce(func, self.gather(self.reduce_to(func, futures)))

    def reduce_gather(self, func, futures, fan_in: int = 2):
        return self.reduce(func, futures)

    def reduce_to(self, func, futures, fan_in: int = 2) -> list:
        """The fixed-order pairs of :class:`TreeReductions` that each worker can add alone
        (levels while no pair spans two workers); :func:`finish_reduce` adds the rest."""
        level = list(futures)
        while len(level) > 1 and all(
                type(a) is Part and type(b) is Part and a.owner == b.owner
                for a, b in zip(level[::2], level[1::2], strict=False)):
            level = _pairs(func, level, self.submit)
        return level

    def gather(self, value):
        """The value of every :class:`Part` in ``value`` (a nested list), from the worker
        that holds it; other values as they are."""
        parts = list(_flatten(value, Part))
        if not parts:
            return value
        mine = {i: p.value for i, p in enumerate(parts) if p.owner == self.me}
        values = self._exchange(mine)
        self.exchanges += 1
        self.gathered_bytes += sum(nbytes(v) for i, v in values.items() if i not in mine)
        if sorted(values) != list(range(len(parts))):
            raise RuntimeError("an exchange between the workers lost values")
        ordered = (values[i] for i in range(len(parts)))
        return _unflatten(value, Part, lambda part: next(ordered))


class Mailbox:
    """What the other actors sent, by exchange and sender; the actor's thread waits on it
    while the worker's event loop fills it (:meth:`BlockStore.deliver`)."""

    def __init__(self):
        self._ready = threading.Condition()
        self._letters: dict[int, dict[int, object]] = {}
        self._stopped: str | None = None

    def put(self, tag: int, sender: int, payload) -> None:
        with self._ready:
            self._letters.setdefault(tag, {})[sender] = payload
            self._ready.notify_all()

    def stop(self, reason: str) -> None:
        with self._ready:
            self._stopped = reason
            self._ready.notify_all()

    def take(self, tag: int, senders: int, timeout: float = EXCHANGE_TIMEOUT) -> dict:
        """The ``senders`` letters of exchange ``tag``, once all have come."""
        with self._ready:
            while len(self._letters.get(tag, ())) < senders:
                if self._stopped is not None:
                    raise WorkerLost(self._stopped)
                if not self._ready.wait(timeout):
                    raise WorkerLost(f"no answer from the other workers in {timeout:.0f} s")
            return self._letters.pop(tag, {})  # (none: no other actor)


class Peers:
    """One actor's side of the exchanges: its place among the actors, their handles and its
    mailbox."""

    def __init__(self, me: int, actors: list, mailbox: Mailbox):
        self.me = me
        self.others = [(i, a) for i, a in enumerate(actors) if i != me]
        self.mailbox = mailbox
        self._tags = count()

    def exchange(self, mine: dict) -> dict:
        """``mine`` sent to every other actor; all of theirs, with it, once they come."""
        tag = next(self._tags)
        sent = [actor.deliver(tag, self.me, mine) for _, actor in self.others]
        letters = self.mailbox.take(tag, len(self.others))
        try:
            for future in sent:
                future.result()
        except OSError as exc:
            raise WorkerLost(f"a worker left mid-fit ({exc})") from exc
        merged = dict(mine)
        for sender in sorted(letters):
            merged.update(letters[sender])
        return merged


class PeerBoosters:
    """The client's side: the engine's :class:`~rebelboost.engine.Booster`, each stage
    fitted by one call to every worker's actor (:meth:`BlockStore.grow`). ``make(executor,
    blocks)`` makes an actor's booster (picklable; its validation rows stay here:
    ``validation_loss``)."""

    blas_threads = 1

    def __init__(self, actors, make, max_leaves: int, validation_loss=None):
        self.executor = actors
        self.val_loss = validation_loss
        self.round_trips: list[int] = []  # calls to the workers, per tree (one)
        self.split_batches: list[int] = []  # per tree, its batches of splits
        self.exchanges: list[int] = []  # and the workers' exchanges (its weights' too)
        self.exchanged_bytes = 0  # received by the workers from one another
        owners = [node.home for node in actors.blocks]
        keys = [node.key for node in actors.blocks]
        self.max_leaves = max_leaves
        self._failed = False
        self._initial = self._all("start", lambda a: (a, actors.actors, owners, keys,
                                                       make))[0]

    def _all(self, method: str, args=lambda a: ()) -> list:
        """``method`` called on every actor at once; their answers. When one fails, the
        others are told to stop waiting for it (they would wait on an exchange for good)."""
        if self._failed:
            raise WorkerLost("the workers' trees stopped after a failure")
        try:
            running = dict(enumerate(getattr(actor, method)(*args(a))
                                     for a, actor in enumerate(self.executor.actors)))
        except RuntimeError as exc:  # ("Worker holding Actor was lost")
            self._failed = True
            raise WorkerLost(f"a worker left mid-fit ({exc})") from exc
        answers, failure, pause = {}, None, 0.0005
        while running:
            for a, future in list(running.items()):
                if future.done():
                    del running[a]
                    try:
                        answers[a] = future.result()
                    except BaseException as exc:  # noqa: BLE001 (raised below, once all stop)
                        if failure is None:
                            failure, self._failed = exc, True
                            self.abort(f"another worker failed ({exc!r})")
            if running:  # (a tree of 20M rows takes seconds: the client need not spin)
                time.sleep(pause)
                pause = min(2 * pause, 0.005)
        if isinstance(failure, OSError | WorkerLost):  # (Dask's CommClosedError: an OSError)
            raise WorkerLost(f"a worker left mid-fit ({failure})") from failure
        if failure is not None:
            raise failure
        return [answers[a] for a in range(len(answers))]

    def abort(self, reason: str) -> None:
        """Every actor still waiting on an exchange stops."""
        for actor in self.executor.actors:
            try:
                actor.stop(reason).result()
            except Exception:  # noqa: BLE001, S110 (a dead worker's actor cannot be told)
                pass

    def initial_loss(self) -> float:
        return self._initial

    def fit_stage(self, iteration: int):
        answers = self._all("stage", lambda a: (iteration,))
        stage, splits, exchanges = answers[0][:3]
        if not np.array_equal([other[0].loss for other in answers],
                              [stage.loss] * len(answers), equal_nan=True):
            raise RuntimeError("the workers' trees disagree")
        self.round_trips.append(1)
        self.split_batches.append(splits)
        self.exchanges.append(exchanges)
        self.exchanged_bytes += sum(received for *_, received in answers)
        return stage

    def validation_loss(self, scores) -> float:
        return self.val_loss.loss(scores)

    def stack(self, pieces) -> LeafTreeArrays:
        return LeafTreeArrays.stack(pieces, self.max_leaves)

    def covers(self):
        return self._all("covers")[0]

    def release(self) -> None:
        if not self._failed:  # (after a failure the actors go with the executor)
            self._all("release")
