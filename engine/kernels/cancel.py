"""A cancellation flag that numba kernels poll while another thread may set it.

A plain ``stop[0]`` read inside a kernel loop may be hoisted out of the loop by
the compiler (nothing in the loop writes it, as far as the optimiser can see),
so the kernel would never notice a cancellation.  :func:`cancelled` reads the
flag with an atomic acquire load, which the optimiser keeps in place; on x86 and
ARM it costs the same as a plain load.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["cancelled", "new_flag"]


@intrinsic
def _load_acquire(typingctx, flag):
    """First byte of a uint8 array, read with an atomic acquire load."""
    if not (isinstance(flag, types.Array) and flag.dtype == types.uint8):
        return None

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.load_atomic(array.data, "acquire", 1)

    return types.uint8(flag), codegen


@njit(cache=True, inline="always")
def cancelled(flag):  # pragma: no cover - compiled
    """True once ``flag[0]`` is non-zero (set by another thread)."""
    return _load_acquire(flag) != 0


def new_flag() -> np.ndarray:
    """A fresh, unset flag: a uint8 array of shape (1,)."""
    return np.zeros(1, dtype=np.uint8)
