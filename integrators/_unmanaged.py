"""Unmanaged array views for Numba hot loops.

Numba reference-counts every array it passes to a function (an atomic increment and decrement
per array per call).  In a kernel that calls a scheme, a force and a plan once per chain-step
with a dozen array arguments, that bookkeeping costs more than the arithmetic.  A view made with
``numba.carray`` from a raw pointer carries no reference count; the kernel makes such views of
arrays whose owners (the caller's arguments) outlive the call, so nothing can be freed early.
"""

import numba as nb
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _voidptr(typingctx, address):
    sig = types.voidptr(address)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return sig, codegen


@nb.njit(nogil=True, inline="always")
def unmanaged(a):
    """A view of C-contiguous ``a`` without reference counting; valid while ``a`` lives."""
    return nb.carray(_voidptr(a.ctypes.data), a.shape, a.dtype)
