"""Traced programs (IRs): calling, printing, transforms and saved graphs."""

from __future__ import annotations

import ctypes
import json
import os
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import _lib
from ._lib import lib
from .context import Context, current
from .errors import check
from .value import Tree, Value, to_value

if TYPE_CHECKING:
    from .program import Program
    from .walk import Walk

__all__ = ["Ir"]


def _ir_out(call: Callable[[Any], int | None]) -> "Ir":
    """The IR a C call(&out) makes (call returns its af_error_t*)."""
    out = ctypes.c_void_p()
    check(call(ctypes.byref(out)))
    return Ir._own(out.value)


def _index(i: int) -> int:
    if not isinstance(i, int) or i < 0:
        raise IndexError(f"equation index must be a non-negative int, got {i!r}")
    return i


def _path(path: str | os.PathLike[str]) -> bytes:
    return os.fsencode(path)


class Ir:
    """An immutable traced program. ``==`` is structural equality, ``hash``
    the structural hash, ``str`` the text form (docs/IR_TEXT.md)."""

    __slots__ = ("_ptr",)
    _ptr: int | None

    @classmethod
    def _own(cls, ptr: int | None) -> "Ir":
        ir = cls.__new__(cls)
        ir._ptr = ptr
        return ir

    def __del__(self) -> None:
        _lib.release(self, lib.af_ir_free)

    # -- calling ---------------------------------------------------------------

    def __call__(self, *inputs: Tree, ctx: Context | None = None) -> Value:
        """Runs the IR on positional inputs (inlined when called inside a
        trace, recorded on a lazy context). Ctrl-C while it runs raises
        KeyboardInterrupt at once and cancels the run."""
        vals = [to_value(x) for x in inputs]
        cx = current(ctx)
        return cx._op(lambda c, o: lib.af_ir_call(c, self._ptr, _lib.handles(vals), len(vals), o), vals, may_wait=True)

    call = __call__

    async def acall(self, *inputs: Tree, ctx: Context | None = None) -> Value:
        """__call__ for asyncio: runs the IR (compiled through the context's
        plan cache) without blocking the running loop; see Program.acall.
        Inside a trace or on a lazy context nothing waits: same as a call."""
        cx = current(ctx)
        if lib.af_is_tracing() or cx._lazy:
            return self(*inputs, ctx=cx)
        return await self.compile(cx).acall(*inputs, ctx=cx)

    def compile(self, ctx: Context | None = None) -> "Program":
        """A Program for the dataflow executor (validate, DCE, CSE, plan)."""
        from .program import Program

        return Program.compile(self, ctx)

    def walk(self, *inputs: Tree, ctx: Context | None = None) -> "Walk":
        """A stepper over the IR's equations (see libaf.Walk)."""
        from .walk import Walk

        return Walk(self, inputs, current(ctx))

    # -- inspection ------------------------------------------------------------

    def to_text(self) -> str:
        b = _lib.Bytes()
        check(lib.af_ir_to_text(self._ptr, ctypes.byref(b)))
        return _lib.take_bytes(b).decode("utf-8")

    def to_dot(self) -> str:
        """Graphviz DOT."""
        b = _lib.Bytes()
        check(lib.af_ir_to_dot(self._ptr, ctypes.byref(b)))
        return _lib.take_bytes(b).decode("utf-8")

    @property
    def eqn_count(self) -> int:
        n: int = lib.af_ir_eqn_count(self._ptr)
        return n

    @property
    def input_count(self) -> int:
        n: int = lib.af_ir_input_count(self._ptr)
        return n

    @property
    def prims(self) -> list[str]:
        """The primitive name of each equation, in order."""
        return [lib.af_ir_eqn_prim(self._ptr, i).decode() for i in range(self.eqn_count)]

    def eqn_sched(self, i: int) -> tuple[int, float]:
        """(level, priority) of equation i of a scheduled IR (see sched)."""
        if not isinstance(i, int) or i < 0:
            raise IndexError(f"equation index must be a non-negative int, got {i!r}")
        level, prio = ctypes.c_uint32(), ctypes.c_double()
        check(lib.af_ir_eqn_sched(self._ptr, i, ctypes.byref(level), ctypes.byref(prio)))
        return level.value, prio.value

    def validate(self) -> None:
        """Raises InvalidArgument describing the first problem, if any."""
        check(lib.af_ir_validate(self._ptr))

    # -- inspection (JSON documents of af.h's af_ir_json family, parsed) ------

    def _json(self, call: Callable[[Any], int | None]) -> dict[str, Any]:
        """The JSON document a C call(&bytes) writes, parsed (an object)."""
        b = _lib.Bytes()
        check(call(ctypes.byref(b)))
        doc: dict[str, Any] = json.loads(_lib.take_bytes(b).decode("utf-8"))
        return doc

    def inspect(self) -> dict[str, Any]:
        """The whole IR: inputs, outputs, topological_order, vars (producer,
        consumers) and eqns."""
        return self._json(lambda b: lib.af_ir_json(self._ptr, b))

    def eqn(self, i: int) -> dict[str, Any]:
        """Equation i: prim, in (vars or literals with kinds), out, deps,
        params, subs, tags."""
        return self._json(lambda b: lib.af_ir_eqn_json(self._ptr, _index(i), b))

    def var(self, v: int) -> dict[str, Any]:
        """Variable v: kind, producer (None for an input), consumers."""
        if not isinstance(v, int) or not 0 <= v < 2**32:
            raise IndexError(f"variable id must be a non-negative int, got {v!r}")
        return self._json(lambda b: lib.af_ir_var_json(self._ptr, v, b))

    def sub(self, i: int, path: str) -> "Ir":
        """The sub-IR at path of equation i ("body", "branches/billing")."""
        p = path.encode("utf-8")
        return _ir_out(lambda out: lib.af_ir_sub(self._ptr, _index(i), p, len(p), out))

    def _related(self, i: int, flags: int, max_bytes: int | None) -> dict[str, Any]:
        idx = _index(i)
        if max_bytes is None:
            return self._json(lambda b: lib.af_ir_related_json(self._ptr, idx, flags, b))
        # 0 would mean the default in C: reject it rather than surprise.
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not 0 < max_bytes < 2**64:
            raise ValueError(f"max_bytes must be a positive int (bytes), got {max_bytes!r}")
        return self._json(lambda b: lib.af_ir_related_json_with(self._ptr, idx, flags, max_bytes, b))

    def ancestors(self, i: int, deep: bool = False, *, max_bytes: int | None = None) -> dict[str, Any]:
        """{"eqns": [...]} equation i transitively reads; with deep also
        "nested": the paths of the equations inside their sub-IRs.
        max_bytes: the largest answer accepted, in bytes of its JSON (None =
        the default, 64 MiB); a larger one raises InvalidArgument ("over the
        limit of N") before anything is built."""
        return self._related(i, 2 if deep else 0, max_bytes)

    def descendants(self, i: int, deep: bool = False, *, max_bytes: int | None = None) -> dict[str, Any]:
        """{"eqns": [...]} that transitively read equation i (see ancestors)."""
        return self._related(i, 3 if deep else 1, max_bytes)

    def slice(self, outputs: Sequence[str], inputs: Sequence[str] | None = None) -> "Ir":
        """The part of the IR computing the outputs at paths ``outputs`` from
        the inputs at paths ``inputs`` (None: the IR's own inputs)."""
        outs = [o.encode("utf-8") for o in outputs]
        o_ptrs = (ctypes.c_char_p * max(1, len(outs)))(*outs)
        o_lens = (ctypes.c_size_t * max(1, len(outs)))(*[len(o) for o in outs])
        i_ptrs = i_lens = None
        n_in = 0
        if inputs is not None:
            ins = [i.encode("utf-8") for i in inputs]
            n_in = len(ins)
            # At least one slot: an empty chosen list must reach C as non-NULL.
            i_ptrs = (ctypes.c_char_p * max(1, n_in))(*ins)
            i_lens = (ctypes.c_size_t * max(1, n_in))(*[len(i) for i in ins])
        return _ir_out(lambda out: lib.af_ir_slice(self._ptr, o_ptrs, o_lens, len(outs), i_ptrs, i_lens, n_in, out))

    def cost(self, batch: int = 1) -> dict[str, Any]:
        """Dry-run LM cost for batch examples: calls per model in total and on
        the critical path."""
        return self._json(lambda b: lib.af_ir_cost_json(self._ptr, batch, b))

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<libaf.Ir {self.input_count} inputs, {self.eqn_count} equations>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ir) and bool(lib.af_ir_equal(self._ptr, other._ptr))

    def __hash__(self) -> int:
        h: int = lib.af_ir_hash(self._ptr)
        return h

    # -- transforms (each returns a new IR) -------------------------------------

    def batch(self, in_axes: Tree = None, ctx: Context | None = None) -> "Ir":
        """vmap: in_axes is a bool tree prefix of the inputs (None = all batched)."""
        axes = None if in_axes is None else to_value(in_axes)
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_batch, self._ptr, axes._ptr if axes is not None else None, o))

    def pushforward(self, ctx: Context | None = None) -> "Ir":
        """jvp: takes (primals, tangents), returns [outputs, output_tangents]."""
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_pushforward, self._ptr, o))

    def pullback(self, ctx: Context | None = None) -> "Ir":
        """vjp: takes (primals, output_cotangent), returns [outputs, input_cotangents]."""
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_pullback, self._ptr, o))

    def dce(self, out_used: Tree = None, ctx: Context | None = None) -> "Ir":
        """Dead code elimination; out_used is a bool tree prefix of the output."""
        used = None if out_used is None else to_value(out_used)
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_dce, self._ptr, used._ptr if used is not None else None, o))

    def cse(self, merge_nondeterministic: bool = False, ctx: Context | None = None) -> "Ir":
        """Merges identical pure equations (LM calls and host tools too if asked)."""
        opts = b'{"merge_nondeterministic": true}' if merge_nondeterministic else b"{}"
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_cse_with, self._ptr, opts, len(opts), o))

    def sched(self, ctx: Context | None = None) -> "Ir":
        """Annotates every equation with its level and priority."""
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_sched, self._ptr, o))

    # -- saved graphs --------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the .afg file (atomically: temporary file, then rename)."""
        p = _path(path)
        check(lib.af_ir_save(self._ptr, p, len(p)))

    @classmethod
    def load(cls, path: str | os.PathLike[str], ctx: Context | None = None) -> "Ir":
        """Reads and checks an .afg file."""
        p = _path(path)
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_ir_load, p, len(p), o))

    def to_bytes(self) -> bytes:
        """The .afg bytes (deterministic: the same IR gives the same bytes)."""
        b = _lib.Bytes()
        check(lib.af_ir_to_bytes(self._ptr, ctypes.byref(b)))
        return _lib.take_bytes(b)

    @classmethod
    def from_bytes(cls, data: bytes, ctx: Context | None = None) -> "Ir":
        """An IR from .afg bytes, after every loader check."""
        data = bytes(data)
        cx = current(ctx)
        return _ir_out(lambda o: cx._using(lib.af_ir_from_bytes, data, len(data), o))
