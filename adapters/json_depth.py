"""How deep a JSON text nests, found without parsing it.

Python's JSON reader and every recursive walk over what it returns stop with a
``RecursionError`` somewhere past a thousand levels; a body of ``[[[[...`` is a few kilobytes.
Readers of untrusted JSON (the API's bodies, ``gpuscout parse`` of a recorded file) check
the nesting first and refuse it by name.
"""

from __future__ import annotations

import re

__all__ = ["MAX_JSON_DEPTH", "json_depth_exceeds"]

#: The deepest nesting a recorded provider answer may have (real ones nest under 20).
MAX_JSON_DEPTH = 64

_TOKENS = re.compile(rb'["\[\]{}]|\\.')


def json_depth_exceeds(data: bytes, limit: int) -> bool:
    """Whether ``data`` nests arrays and objects deeper than ``limit`` levels; brackets in
    strings do not count. Malformed text is left to the parser to refuse.

    >>> json_depth_exceeds(b'{"a": [[1]], "b": "[[[["}', 3)
    False
    >>> json_depth_exceeds(b"[" * 5, 4)
    True
    """
    depth = 0
    in_string = False
    for match in _TOKENS.finditer(data):
        token = match.group()
        if token == b'"':
            in_string = not in_string
        elif in_string or token[:1] == b"\\":
            continue
        elif token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False
