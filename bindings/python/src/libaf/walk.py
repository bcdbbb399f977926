"""Walking an IR one equation at a time (debuggers, hosts that run some
equations themselves)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

from . import _lib
from ._lib import lib
from .context import Context
from .errors import check
from .value import Tree, Value, to_value

if TYPE_CHECKING:
    from .ir import Ir

__all__ = ["Walk", "Step"]


@dataclass
class Step:
    """The next equation: its index, primitive name and input tree."""

    index: int
    prim: str
    inputs: Value


class Walk:
    """A stepper over an IR. Iterate it (or call next_step) to get each
    equation, then eval() it with libaf or send() its outputs; outputs()
    gives the program's output once no equation is left. Iterating without
    eval/send evaluates each step with libaf.

    A walk evaluates equations on the context it was made with (eval(),
    iterating): it holds that context open for each evaluation, and once
    the context is closed they raise ValueError ("this libaf Context is
    closed")."""

    def __init__(self, ir: "Ir", inputs: Sequence[Tree], ctx: Context) -> None:
        self._ptr = None
        self._ir = ir
        # libaf's walk runs its equations on ctx's run-time state (a raw
        # pointer to it): each eval holds ctx open, and a closed ctx raises.
        self._ctx = ctx
        vals = [to_value(x) for x in inputs]
        out = ctypes.c_void_p()
        check(ctx._using(lib.af_walk_new, ir._ptr, _lib.handles(vals), len(vals), ctypes.byref(out)))
        self._ptr = out.value
        self._pending = False

    def __del__(self) -> None:
        _lib.release(self, lib.af_walk_free)

    def next_step(self) -> Step | None:
        """The current equation, or None when the walk is done."""
        idx = ctypes.c_size_t()
        inputs = ctypes.c_void_p()
        check(lib.af_walk_next(self._ptr, ctypes.byref(idx), ctypes.byref(inputs)))
        if idx.value == _lib.AF_WALK_DONE:
            return None
        self._pending = True
        prim = lib.af_ir_eqn_prim(self._ir._ptr, idx.value)
        return Step(idx.value, prim.decode() if prim else "?", Value._own(inputs.value))

    def eval(self) -> None:
        """Evaluates the current equation with libaf's implementation."""
        check(self._ctx._using(lambda _: lib.af_walk_eval(self._ptr)))
        self._pending = False

    def send(self, outputs: Tree) -> None:
        """Supplies the current equation's outputs (its declared structure and kinds)."""
        v = to_value(outputs)
        check(lib.af_walk_send(self._ptr, v._ptr))
        self._pending = False

    def outputs(self) -> Value:
        """The program's output; InvalidArgument while equations remain."""
        out = ctypes.c_void_p()
        check(lib.af_walk_outputs(self._ptr, ctypes.byref(out)))
        return Value._own(out.value)

    def __iter__(self) -> Iterator[Step]:
        while True:
            if self._pending:  # the caller neither evaluated nor sent: libaf does
                self.eval()
            step = self.next_step()
            if step is None:
                return
            yield step

    def run(self) -> Value:
        """Evaluates every remaining equation and returns the output."""
        for _ in self:
            pass
        return self.outputs()
