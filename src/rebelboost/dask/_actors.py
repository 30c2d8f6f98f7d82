"""The booster's tasks without the scheduler: one Dask actor per worker holds that worker's
blocks, and the client calls it directly (an :class:`~rebelboost.blocks.training.Executor`).

A round of splits through the scheduler cost two hops beside the blocks' work (13.5 ms for
two tasks and a gather on 2 cores, against 2.5 ms for an actor call: issue 32's anatomy).
Here a task is only recorded (:meth:`ActorExecutor.submit` returns a :class:`Node`); asking
for a value sends each actor, in one call, every recorded task it holds the inputs of, in
order. A task whose input is on another worker waits one call for that value, which the
client passes on.

An actor's state dies with its worker and is not recomputed: a call to a lost worker raises
:class:`WorkerLost`, and the estimator fits again on the scheduler's tasks (the same model).
"""

from __future__ import annotations

import weakref
from itertools import count

from ..blocks.training import TreeReductions, nbytes


class WorkerLost(RuntimeError):
    """A worker that held blocks left mid-fit (its actor and blocks are gone)."""


class BlockStore:
    """A worker's blocks and the values computed from them (a Dask actor). Driven by the
    client (:meth:`run`, an :class:`ActorExecutor`'s calls) or growing the trees itself
    among its peers (:meth:`start` to :meth:`release`: :mod:`._peers`)."""

    def __init__(self, keys: list[int], *blocks):
        from ._peers import Mailbox

        self.values = dict(zip(keys, blocks, strict=True))
        self.mailbox = Mailbox()  # (before any peer can write to it)
        self.executor = self.booster = self._thread = None

    def run(self, tasks: list[tuple], wanted: list[int], forget: list[int]) -> list:
        """``tasks`` (key, func, args; a :class:`_Key` in args is a stored value) in order;
        the values of ``wanted``; ``forget``'s values dropped first."""
        values = self.values
        for key in forget:
            values.pop(key, None)
        for key, func, args in tasks:
            values[key] = func(*[values[a] if type(a) is _Key else a for a in args])
        return [values[key] for key in wanted]

    async def start(self, me: int, actors: list, owners: list[int], keys: list[int],
                    make) -> float:
        """This worker's booster among ``actors`` (it is ``actors[me]``; block ``i`` is held
        by ``actors[owners[i]]`` under ``keys[i]``): ``make(executor, blocks)``; the
        initial loss."""
        from ._peers import PeerExecutor, Peers

        def start():
            peers = Peers(me, actors, self.mailbox)
            held = {i: self.values[key]
                    for i, (owner, key) in enumerate(zip(owners, keys, strict=True))
                    if owner == me}
            self.executor = PeerExecutor(me, owners, held, peers.exchange)
            self.booster = make(self.executor, self.executor.blocks)
            return self.booster.initial_loss()

        return await self._on_own_thread(start)

    async def stage(self, iteration: int) -> tuple:
        """The next tree (an engine Stage), its batches of splits, its exchanges (the
        weights' too) and the bytes this worker received from the others for it."""
        def stage():
            executor = self.executor
            exchanges, received = executor.exchanges, executor.gathered_bytes
            stage = self.booster.fit_stage(iteration)
            return (stage, self.booster.round_trips[-1], executor.exchanges - exchanges,
                    executor.gathered_bytes - received)

        return await self._on_own_thread(stage)

    async def covers(self):
        return await self._on_own_thread(lambda: self.booster.covers())

    async def release(self) -> None:
        def release():
            self.booster.release()
            self.executor = self.booster = None

        await self._on_own_thread(release)
        self._thread.shutdown(wait=False)
        self._thread = None

    async def _on_own_thread(self, func):
        """``func()`` on this actor's own thread, not the worker's one actor thread: an
        actor waiting there on an exchange would keep another fit's actors on the same
        worker from running, and two fits at once could each wait on the other's."""
        import asyncio
        import contextvars
        from concurrent.futures import ThreadPoolExecutor

        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="rebelboost-trees")
        context = contextvars.copy_context()  # (Dask's worker, for the calls to the peers)
        return await asyncio.get_running_loop().run_in_executor(self._thread, context.run,
                                                                func)

    async def deliver(self, tag: int, sender: int, payload) -> None:
        """Another actor's part of exchange ``tag`` (on the worker's event loop, while this
        actor's thread may be waiting for it)."""
        self.mailbox.put(tag, sender, payload)

    async def stop(self, reason: str) -> None:
        """An exchange waiting here raises :class:`WorkerLost` (the client saw a worker
        fail)."""
        self.mailbox.stop(reason)


_HERE = -1  # the home of a value held by the client only


class _Key(int):
    """A stored value's key among a task's arguments."""


class Node:
    """A task's result, computed on its actor when a value depending on it is gathered."""

    __slots__ = ("key", "home", "func", "args", "done", "value", "fetched", "__weakref__")

    def __init__(self, key: int, home: int, func=None, args: tuple = ()):
        self.key, self.home, self.func, self.args = key, home, func, args
        self.done = func is None  # (a block the actor was made with)
        self.value, self.fetched = None, False

    def inputs(self) -> list[Node]:
        return [a for a in self.args if isinstance(a, Node)]


class ActorExecutor(TreeReductions):
    """The booster's tasks on one :class:`BlockStore` per worker holding blocks; nodes are
    its futures. ``blocks``: Dask futures of the blocks, in order (:attr:`blocks` are their
    nodes)."""

    def __init__(self, cluster, blocks: list):
        from distributed import wait

        client = cluster.client
        self.cluster = cluster
        wait(blocks)
        where = client.who_has(blocks)
        if not all(where[block.key] for block in blocks):
            raise WorkerLost("a block's worker left before the fit")
        homes: dict[str, list[int]] = {}
        for i, block in enumerate(blocks):
            homes.setdefault(sorted(where[block.key])[0], []).append(i)
        self.workers = sorted(homes)
        # (a loose restriction: were the worker to die now, the actor would start elsewhere
        # rather than wait for it; a block's size keeps the scheduler from moving it idly)
        self._actor_futures = [
            client.submit(BlockStore, homes[w], *[blocks[i] for i in homes[w]], actor=True,
                          workers=[w], allow_other_workers=True, pure=False)
            for w in self.workers]
        try:
            self.actors = [f.result() for f in self._actor_futures]
        except OSError as exc:
            raise WorkerLost(f"a worker left as the fit started ({exc})") from exc
        self._forget: list[list[int]] = [[] for _ in self.workers]
        self.blocks: list[Node] = [None] * len(blocks)
        for a, w in enumerate(self.workers):
            for i in homes[w]:
                self.blocks[i] = self._node(a, key=i)
        self._keys = count(len(blocks))

    @property
    def gathered_bytes(self) -> int:
        return self.cluster.gathered_bytes

    def _node(self, home: int, func=None, args: tuple = (), key: int | None = None) -> Node:
        node = Node(next(self._keys) if key is None else key, home, func, args)
        weakref.finalize(node, self._dropped, home, node.key)  # (home: an actor's index)
        return node

    def _dropped(self, home: int, key: int) -> None:
        self._forget[home].append(key)  # (sent with the actor's next call)

    def submit(self, func, *args, worker=None) -> Node:
        """``func(*args)`` as a task on the actor of its first node argument (a recorded
        task: it runs when a value depending on it is gathered)."""
        home = next((a.home for a in args if isinstance(a, Node) and a.home != _HERE), 0)
        return self._node(home, func, args)

    def reduce(self, func, futures):
        """:meth:`reduce_gather`'s value as a node (for the blocks' small summaries, such
        as the weights' largest exponent: the last levels are added here, so that no actor
        waits on another's value)."""
        node = Node(next(self._keys), _HERE)
        node.value, node.fetched = self.reduce_gather(func, futures), True
        return node

    def gather(self, value):
        """The value(s) of a node or a (nested) list of nodes."""
        self._compute(list(_flatten(value)))
        return _unflatten(value)

    def _compute(self, targets: list[Node]) -> None:
        """Runs every task ``targets`` need, in calls of one per actor; fetches their
        values (and those passed from one worker to another)."""
        pending = _pending(targets)
        exported = {id(a) for n in pending for a in n.inputs() if a.home != n.home}
        wanted_here = {id(n) for n in targets}
        while True:
            calls: list[tuple[list, list]] = [([], []) for _ in self.workers]
            scheduled: set[int] = set()
            waiting = []
            for node in pending:
                if all((a.done and (a.home == node.home or a.fetched))
                       or (id(a) in scheduled and a.home == node.home)
                       for a in node.inputs()):
                    scheduled.add(id(node))
                    args = tuple(_arg(a, node.home) for a in node.args)
                    calls[node.home][0].append((node.key, node.func, args))
                else:
                    waiting.append(node)
            fetch = [n for n in _unique(targets + [a for n in pending for a in n.inputs()])
                     if not n.fetched and (id(n) in wanted_here or id(n) in exported)
                     and (n.done or id(n) in scheduled)]
            for node in fetch:
                calls[node.home][1].append(node)
            self._call(calls)
            for node in pending:
                if id(node) in scheduled:
                    node.done, node.func, node.args = True, None, ()  # (its inputs may go)
            if not waiting:
                return
            if len(waiting) == len(pending):
                raise RuntimeError("tasks wait on one another")
            pending = waiting

    def _call(self, calls: list[tuple[list, list]]) -> None:
        """One call to each actor with something to do, all in flight at once."""
        running = []
        for a, (tasks, fetch) in enumerate(calls):
            if tasks or fetch:
                forget, self._forget[a] = self._forget[a], []
                running.append((fetch, self.actors[a].run(tasks, [n.key for n in fetch],
                                                          forget)))
        try:
            for fetch, future in running:
                for node, value in zip(fetch, future.result(), strict=True):
                    node.value, node.fetched = value, True
                    self.cluster.gathered_bytes += nbytes(value)
        except OSError as exc:  # (Dask's CommClosedError is one)
            raise WorkerLost(f"a worker left mid-fit ({exc})") from exc

    def close(self) -> None:
        """Drops the actors and what they hold."""
        self.actors, self._actor_futures = [], []


def _arg(value, home: int):
    if not isinstance(value, Node):
        return value
    return _Key(value.key) if value.home == home else value.value


def _flatten(value, kind=None):
    """The ``kind`` objects (:class:`Node` by default) in ``value``, a nested list or tuple,
    in order."""
    kind = kind or Node
    if isinstance(value, kind):
        yield value
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _flatten(v, kind)


def _unflatten(value, kind=None, fill=lambda node: node.value):
    """``value`` with each ``kind`` object ``x`` in it replaced by ``fill(x)`` (a
    :class:`Node` by its value, by default), in :func:`_flatten`'s order."""
    kind = kind or Node
    if isinstance(value, kind):
        return fill(value)
    if isinstance(value, list | tuple):
        return type(value)(_unflatten(v, kind, fill) for v in value)
    return value


def _unique(nodes: list[Node]) -> list[Node]:
    seen, out = set(), []
    for n in nodes:
        if id(n) not in seen:
            seen.add(id(n))
            out.append(n)
    return out


def _pending(targets: list[Node]) -> list[Node]:
    """The tasks not yet run that ``targets`` need, inputs before their users."""
    order, seen = [], set()
    stack = [(n, False) for n in reversed(targets)]
    while stack:
        node, expanded = stack.pop()
        if node.done or (id(node) in seen and not expanded):
            continue
        if expanded:
            order.append(node)
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((a, False) for a in reversed(node.inputs()))
    return order
