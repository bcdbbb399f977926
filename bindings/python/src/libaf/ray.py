"""Run a saved libaf program over a dataset on a Ray cluster.

    import ray, libaf, libaf.ray as afray

    ray.init()                                   # or ray.init(address="auto")
    spec = afray.WorkerSpec(routes={"*": {"type": "openai", "base_url": URL,
                                          "api_key_env": "OPENAI_API_KEY"}})
    results = afray.run("triage.afg", tickets, spec, progress=print)

The inputs (a list, any iterable, or a ``ray.data.Dataset``) are split into
shards of ``shard_size`` items. The program's bytes go to Ray's object store
once; each worker process loads them once (every loader check runs there),
sets up the routes and host tools of the spec, and runs each shard it gets as
one batched run: the shard's LM calls are in flight together under the
providers' limits, and an item that fails becomes its error value
``{"error": {"code", "name", "message"}}`` while the others complete
(``item_errors``). Results come back in input order, one per item.

A shard whose worker dies is retried by Ray (``max_retries``); a shard's
result is taken from exactly one successful attempt, so every item appears
exactly once. Anything else that stops a shard (a program the loader
rejects, inputs that do not match the program, a host tool that cannot be
set up) fails the whole job at once with :class:`ShardError` naming the
shard or item; the other shards are cancelled and no partial result is
returned.

With ``journal_dir``, each shard runs with a run journal (see
:func:`libaf.journal_summary`) in that directory, named by the shard's place
in the input list: ``shard-<start>.afj``, ``<start>`` the index of its first
item. A shard that Ray reruns after its worker died therefore finds the
journal of its first attempt and answers the LM calls that attempt finished
from it, without asking the provider again; and rerunning the whole job (the
same program, inputs and ``shard_size``) with the same ``journal_dir`` after
it failed or was stopped makes only the calls no earlier run finished.

Secrets never travel in the spec: an openai route names the environment
variable holding its key (``api_key_env``) and each worker reads its own
environment, so the variable must be set on every node of the cluster.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

from .context import Context
from .errors import Error
from .ir import Ir
from .program import Program
from .progress import ProgressBar
from .provider import Provider
from .trace import trace
from .value import Kind, Value

try:  # Ray is optional: the module imports without it, run() asks for it.
    import ray as _ray  # type: ignore[import-not-found,import-untyped,unused-ignore]  # optional; stubs vary
except ImportError:  # pragma: no cover - exercised only without ray
    _ray = None  # type: ignore[assignment,unused-ignore]  # not a module, where ray is typed

__all__ = ["Tool", "WorkerSpec", "ShardError", "run", "run_in_process"]

#: Provider spec keys that would carry a secret inside the shipped spec.
_SECRET_KEYS = ("api_key", "key", "token", "authorization", "password")
_PROVIDERS = ("anthropic", "echo", "ollama", "openai", "replay")  # the types Provider.from_spec makes


class ShardError(Exception):
    """A shard could not run; the message names the shard (and the item,
    when one item's inputs are at fault). The job stops at the first."""


@dataclass(frozen=True)
class Tool:
    """A host tool for the workers: ``fn`` (picklable: a module-level
    function or a ``functools.partial`` of one) and its result kinds, as in
    :meth:`libaf.Context.register_function`. Whether a call is pure is
    recorded in the shipped program when it is traced (``pure=True`` there),
    so a worker runs the calls as traced and a Tool takes no such flag."""

    fn: Callable[..., Any]
    result_kinds: Any


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker sets up before running shards.

    routes: model pattern -> provider, as a dict ``{"type": "echo" |
      "openai" | "anthropic" | "ollama" | "replay", ...options}`` (as
      :meth:`libaf.Provider.from_spec` takes) or a picklable host-provider
      callable (as for :meth:`libaf.Provider.host`).
    tools: host-tool name -> :class:`Tool`.
    """

    routes: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, Tool] = field(default_factory=dict)

    def check(self) -> None:
        """Raises ValueError / TypeError naming the route or tool that cannot
        be shipped: secrets in a provider spec, unknown provider types,
        callables that cannot be pickled."""
        for pattern, p in self.routes.items():
            where = f"WorkerSpec.routes[{pattern!r}]"
            if isinstance(p, dict):
                if p.get("type") not in _PROVIDERS:
                    raise ValueError(f"{where}: 'type' must be one of {sorted(_PROVIDERS)}, got {p.get('type')!r}")
                for k in p:
                    if k.lower() in _SECRET_KEYS:
                        raise ValueError(
                            f"{where}: {k!r} would ship a secret to every worker; name the environment "
                            "variable that holds it instead ('api_key_env') and set it on every node")
            elif callable(p):
                _check_picklable(p, f"{where} (host provider)")
            else:
                raise TypeError(f"{where}: a provider spec dict or a host-provider callable, got {type(p).__name__}")
        for name, t in self.tools.items():
            if not isinstance(t, Tool):
                raise TypeError(f"WorkerSpec.tools[{name!r}]: a libaf.ray.Tool(fn, result_kinds), got {type(t).__name__}")
            _check_picklable(t.fn, f"host tool {name!r}")


def _check_picklable(obj: Any, what: str) -> None:
    # What Ray ships functions with (plain pickle without Ray).
    dumps: Callable[[Any], bytes] = _ray.cloudpickle.dumps if _ray is not None else pickle.dumps
    try:
        dumps(obj)
    except Exception as exc:  # noqa: BLE001 - any pickling failure
        raise TypeError(f"{what} cannot be pickled for the workers: {type(exc).__name__}: {exc} "
                        "(use a module-level function or a functools.partial of one)") from exc


# ---- what a worker does (also run in-process by run_in_process)


def _is_error(v: Any) -> bool:
    return (isinstance(v, dict) and len(v) == 1 and isinstance(v.get("error"), dict)
            and set(v["error"]) == {"code", "name", "message"})


def _skeleton(v: Value, leaves: list[Value]) -> Any:
    """The container structure of a traced output, leaves numbered."""
    k = v.kind
    if k == Kind.DICT:
        return {key: _skeleton(item, leaves) for key, item in v.items()}
    if k == Kind.LIST:
        return [_skeleton(item, leaves) for item in v]
    leaves.append(v)
    return len(leaves) - 1


def _fill(skel: Any, leaves: list[Any]) -> Any:
    if isinstance(skel, dict):
        return {k: _fill(s, leaves) for k, s in skel.items()}
    if isinstance(skel, list):
        return [_fill(s, leaves) for s in skel]
    return leaves[skel]


def _stack(trees: list[Any]) -> Any:
    """Items of one structure as one batched input: the structure once, each
    leaf the list of the items' values (docs/SEMANTICS.md §4 batch)."""
    t0 = trees[0]
    if isinstance(t0, dict):
        return {k: _stack([t[k] for t in trees]) for k in t0}
    if isinstance(t0, (list, tuple)):
        return [_stack([t[j] for t in trees]) for j in range(len(t0))]
    return list(trees)


def _signature(x: Any) -> Any:
    """Structure and leaf types: items with equal signatures batch together."""
    if isinstance(x, dict):
        return ("d", tuple((k, _signature(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return ("l", tuple(_signature(v) for v in x))
    return type(x).__name__


class _Worker:
    """One loaded program with its routes and tools, in one process."""

    def __init__(self, program: bytes, spec: WorkerSpec) -> None:
        self.ctx = Context()
        for pattern, p in spec.routes.items():
            provider = Provider.from_spec(p) if isinstance(p, dict) else Provider.host(p)
            self.ctx.route(pattern, provider)
        for name, t in spec.tools.items():
            self.ctx.register_function(name, t.fn, t.result_kinds)
        try:
            self.ir = Ir.from_bytes(program, self.ctx)
        except Error as exc:
            raise ShardError(f"the program failed the loader on this worker: {exc}") from exc
        self.n_inputs = self.ir.input_count
        # input signature -> (batched program over flat outputs, output skeleton)
        self.batched: dict[Any, tuple[Program, Any]] = {}

    def _args(self, item: Any, index: int) -> tuple[Any, ...]:
        if self.n_inputs == 1:
            return (item,)
        if not isinstance(item, (list, tuple)) or len(item) != self.n_inputs:
            raise ShardError(f"item {index}: the program takes {self.n_inputs} inputs; pass each item as a "
                             f"tuple of {self.n_inputs}, got {type(item).__name__}"
                             + (f" of {len(item)}" if isinstance(item, (list, tuple)) else ""))
        return tuple(item)

    def _compiled(self, args: tuple[Any, ...], index: int) -> tuple[Program, Any]:
        sig = _signature(args)
        if sig not in self.batched:
            skel: list[Any] = []

            def flat(*xs: Value) -> list[Value]:
                leaves: list[Value] = []
                skel.append(_skeleton(self.ir(*xs, ctx=self.ctx), leaves))
                return leaves

            try:
                flat_ir = trace(flat, *args, ctx=self.ctx)
            except Error as exc:
                raise ShardError(f"item {index}: the inputs do not match the program: {exc}") from exc
            self.batched[sig] = (flat_ir.batch(ctx=self.ctx).compile(self.ctx), skel[0])
        return self.batched[sig]

    def run(self, start: int, items: list[Any], journal_dir: Optional[str] = None) -> list[Any]:
        """Results of items (global indices start...), in order. With
        journal_dir, each batched run has its journal there (_journal_path)."""
        args = [self._args(x, start + i) for i, x in enumerate(items)]
        groups: dict[Any, list[int]] = {}
        for i, a in enumerate(args):
            groups.setdefault(_signature(a), []).append(i)
        out: list[Any] = [None] * len(items)
        for members in groups.values():
            program, skel = self._compiled(args[members[0]], start + members[0])
            columns = [_stack([args[i][k] for i in members]) for k in range(len(args[members[0]]))]
            journal = None if journal_dir is None else _journal_path(journal_dir, start, start + members[0])
            got = program(*columns, ctx=self.ctx, item_errors=True, journal=journal).to_py()
            for j, i in enumerate(members):
                leaves = [col[j] if isinstance(col, list) and len(col) == len(members) else col for col in got]
                err = next((v for v in leaves if _is_error(v)), None)
                out[i] = err if err is not None else _fill(skel, leaves)
        return out


def _journal_path(journal_dir: str, start: int, first: int) -> str:
    """The journal of the batched run of a shard (starting at item start)
    whose first item is first. It depends only on the shard's place in the
    input list, so every attempt at a shard uses the same journal. A shard
    whose items have different structures runs one batch per structure (each
    with its own program, so its own journal): the first batch always starts
    at the shard's first item and has shard-<start>.afj; a later one is named
    by its first item too."""
    name = f"shard-{start}.afj" if first == start else f"shard-{start}-item-{first}.afj"
    return os.path.join(journal_dir, name)


# One loaded program per job in each worker process: a worker runs many
# shards of a job and loads the program only for the first. Few jobs at once.
_LOADED: "OrderedDict[str, _Worker]" = OrderedDict()


def _worker_for(job: str, program: bytes, spec: WorkerSpec) -> _Worker:
    w = _LOADED.get(job)
    if w is None:
        w = _LOADED[job] = _Worker(program, spec)
        while len(_LOADED) > 4:
            _LOADED.popitem(last=False)
    return w


def _run_shard(job: str, program: bytes, spec: WorkerSpec, shard: int, start: int, items: list[Any],
               journal_dir: Optional[str] = None) -> list[Any]:
    where = f"shard {shard} (items {start}..{start + len(items) - 1})"
    try:
        return _worker_for(job, program, spec).run(start, items, journal_dir)
    except ShardError as exc:
        raise ShardError(f"{where}: {exc}") from exc.__cause__
    except Exception as exc:  # noqa: BLE001 - reported with the shard named
        raise ShardError(f"{where}: {type(exc).__name__}: {exc}") from exc


# ---- the driver


def _program_bytes(program: bytes | str | os.PathLike[str] | Ir | Program) -> bytes:
    if isinstance(program, (bytes, bytearray, memoryview)):
        return bytes(program)
    if isinstance(program, Ir):
        return program.to_bytes()
    if isinstance(program, Program):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "program.afg")
            program.save(path)
            with open(path, "rb") as f:
                return f.read()
    if isinstance(program, (str, os.PathLike)):
        with open(program, "rb") as f:
            return f.read()
    raise TypeError(f"program: .afg bytes, a path, a libaf.Ir or a libaf.Program, got {type(program).__name__}")


def _items(inputs: Any) -> list[Any]:
    """A list of items; a ray.data.Dataset's rows (one column: its value;
    several: the row as a dict)."""
    if hasattr(inputs, "iter_rows") and hasattr(inputs, "schema"):
        rows: list[Any] = []
        for row in inputs.iter_rows():
            row = dict(row)
            rows.append(next(iter(row.values())) if len(row) == 1 else row)
        return rows
    if isinstance(inputs, (str, bytes, dict)) or not isinstance(inputs, Iterable):
        raise TypeError(f"inputs: a list, an iterable or a ray.data.Dataset of items, got {type(inputs).__name__}")
    return list(inputs)


def _journal_dir(journal_dir: Optional[str | os.PathLike[str]]) -> Optional[str]:
    """journal_dir made absolute on the driver: a worker's working directory
    is not the driver's."""
    if journal_dir is None:
        return None
    d = os.fspath(journal_dir)
    if not isinstance(d, str):
        d = os.fsdecode(d)
    if not d:
        raise ValueError("journal_dir must be a directory path (None = no journals), got ''")
    return os.path.abspath(d)


def _shards(n: int, shard_size: int) -> list[tuple[int, int]]:
    if not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive int, got {shard_size!r}")
    return [(s, min(s + shard_size, n)) for s in range(0, n, shard_size)]


def run_in_process(program: bytes | str | os.PathLike[str] | Ir | Program, inputs: Any,
                   spec: Optional[WorkerSpec] = None, *, shard_size: int = 64,
                   journal_dir: Optional[str | os.PathLike[str]] = None) -> list[Any]:
    """What :func:`run` computes, in this process and without Ray: the same
    loading, batching and per-item errors, shard after shard, and the same
    journals in journal_dir (so either may resume the other's job)."""
    spec = spec or WorkerSpec()
    spec.check()
    journals = _journal_dir(journal_dir)
    data, items = _program_bytes(program), _items(inputs)
    job, out = uuid.uuid4().hex, []
    try:
        for k, (a, b) in enumerate(_shards(len(items), shard_size)):
            out.extend(_run_shard(job, data, spec, k, a, items[a:b], journals))
    finally:
        _LOADED.pop(job, None)
    return out


def run(program: bytes | str | os.PathLike[str] | Ir | Program, inputs: Any, spec: Optional[WorkerSpec] = None, *,
        shard_size: int = 64, max_retries: int = 3, progress: Optional[Callable[[int, int], None] | bool] = None,
        num_cpus: float = 1, max_in_flight_shards: Optional[int] = None,
        journal_dir: Optional[str | os.PathLike[str]] = None) -> list[Any]:
    """Runs program over inputs on the Ray cluster (``ray.init`` first, or
    Ray starts a local one) and returns one result per item, in input order:
    the program's output or the item's error value.

    program: .afg bytes, a path to one, a libaf.Ir or a libaf.Program. An
      item is the program's input, or a tuple of its inputs when it takes
      several.
    progress: progress(items_done, total), on this thread as shards finish;
      or True: a progress bar of the items on stderr (tqdm's when tqdm is
      installed, else a plain line).
    max_retries: how many times Ray reruns a shard whose worker died.
    max_in_flight_shards: shards submitted at once (None = all).
    journal_dir: None (no journals), or a directory (created when missing)
      where each shard runs with the run journal ``shard-<start>.afj``,
      ``<start>`` the index of the shard's first item (a shard whose items
      have several structures runs one batch per structure; the later ones
      get ``shard-<start>-item-<first>.afj``). A journal is a SQLite file
      recording each LM call its shard completed (created 0600: it holds
      the LM replies); a shard Ray reruns after its worker died
      answers the calls its first attempt finished from it without asking
      the provider, and so does a rerun of the job with the same program,
      inputs, ``shard_size`` and ``journal_dir`` (after a failure or a stop):
      only calls no earlier attempt finished reach a provider. The results
      are the same with or without journals, each item once. Use one
      ``journal_dir`` per job: a journal of another program or other inputs
      fails its shard (ShardError). It must be a path every worker can
      write (a shared filesystem on a multi-node cluster: a shard rerun on
      another node without it starts over); relative paths are made
      absolute here. libaf.journal_summary(path) reads one.
    Raises ShardError (the first shard that failed, naming it) and cancels
    the rest.
    """
    if _ray is None:
        raise ImportError("libaf.ray needs Ray: pip install 'ray>=2'")
    spec = spec or WorkerSpec()
    spec.check()
    journals = _journal_dir(journal_dir)
    data, items = _program_bytes(program), _items(inputs)
    shards = _shards(len(items), shard_size)
    if not shards:
        return []
    bar = ProgressBar("items", total=len(items)) if progress is True else None
    if bar is not None:
        progress = bar.count
    elif progress is not None and progress is not False and not callable(progress):
        raise TypeError("progress must be a callable (items_done, total) or True (a progress bar)")
    task = _ray.remote(_run_shard).options(max_retries=max_retries, num_cpus=num_cpus, retry_exceptions=False)
    job, data_ref, spec_ref = uuid.uuid4().hex, _ray.put(data), _ray.put(spec)
    results: list[Any] = [None] * len(shards)
    owner: dict[Any, int] = {}  # ObjectRef of a shard's task -> the shard
    next_shard, done = 0, 0
    limit = max_in_flight_shards or len(shards)

    def submit() -> None:
        nonlocal next_shard
        while next_shard < len(shards) and len(owner) < limit:
            a, b = shards[next_shard]
            owner[task.remote(job, data_ref, spec_ref, next_shard, a, items[a:b], journals)] = next_shard
            next_shard += 1

    submit()
    try:
        while owner:
            ready, _ = _ray.wait(list(owner), num_returns=1)
            for ref in ready:
                k = owner.pop(ref)
                a, b = shards[k]
                try:
                    got = _ray.get(ref)
                except _ray.exceptions.RayTaskError as exc:
                    cause = exc.cause if isinstance(getattr(exc, "cause", None), ShardError) else None
                    raise (cause or ShardError(f"shard {k} (items {a}..{b - 1}): {exc}")) from exc
                except _ray.exceptions.RayError as exc:
                    raise ShardError(f"shard {k} (items {a}..{b - 1}) failed after {max_retries} retries: "
                                     f"{type(exc).__name__}: {exc}") from exc
                if len(got) != b - a:
                    raise ShardError(f"shard {k}: {len(got)} results for {b - a} items")
                results[k] = got
                done += b - a
                if callable(progress):
                    progress(done, len(items))
            submit()
    finally:
        for ref in owner:  # after a failure: stop what is still running
            _ray.cancel(ref, force=True)
        if bar is not None:
            bar.close()
    return [r for shard in results for r in shard]
