"""Hostile input for the property-based tests (Hypothesis): JSON-RPC frames no parser should
crash on, and none of them a JSON-RPC message."""

from __future__ import annotations

import json

from hypothesis import strategies as st

__all__ = ["hostile_frames"]


def hostile_frames() -> st.SearchStrategy[bytes]:
    """One line each (no newline inside), none a JSON-RPC message."""
    nested = st.tuples(st.integers(150, 50_000), st.sampled_from(["[", '{"a":'])).map(
        lambda d: (d[1] * d[0] + ("]" if d[1] == "[" else "}") * d[0]).encode()
    )
    deep_in_envelope = st.integers(201, 20_000).map(
        lambda d: (
            '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":' + "[" * d + "]" * d + "}"
        ).encode()
    )
    junk = st.binary(min_size=1, max_size=300).filter(
        lambda b: b"\n" not in b and b"\r" not in b and b.strip() != b""
    )
    json_scalar = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
    ids = st.none() | st.integers(-(2**70), 10**8) | st.text(max_size=8)
    wrong_envelope = st.fixed_dictionaries(
        {"id": ids, "method": json_scalar},
        optional={"jsonrpc": st.sampled_from(["1.0", "2", 2.0, None, ""]), "params": json_scalar},
    ).map(lambda d: json.dumps(d).encode())
    not_object = json_scalar.filter(lambda v: not isinstance(v, dict)).map(
        lambda v: json.dumps(v).encode()
    )
    huge_number = st.integers(5_000, 100_000).map(
        lambda n: b'{"jsonrpc":"2.0","id":1' + b"0" * n + b',"method":"ping"}'
    )
    bad_escape = st.sampled_from(
        [b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"', b'"\\x"', b"\xc0\xaf{}", b"\x00"]
    )
    return st.one_of(
        nested, deep_in_envelope, junk, wrong_envelope, not_object, huge_number, bad_escape
    )
