"""Give memory a load or a snapshot freed back to the operating system.

Loading a snapshot builds large short-lived Python objects (the stored rows, their JSON
text), and storing one holds a provider's offers at a time; once they are freed glibc keeps
most of that heap mapped, so a process that peaked at ~1 GB while loading stayed there (640
MB of it is what ``malloc_trim`` returns), and polars, whose allocator is not glibc's,
cannot reuse it. :func:`release_memory` asks glibc to hand back what it holds free; on
another C library (musl, macOS) it does nothing. It lives in ``db`` because the rollups
call it, and ``db`` does not import ``service``.
"""

from __future__ import annotations

import ctypes
import functools
import platform
from collections.abc import Callable

__all__ = ["release_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_memory() -> bool:
    """Return the free heap to the OS (glibc ``malloc_trim(0)``); ``False`` where there is
    no such call, or nothing was returned."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
