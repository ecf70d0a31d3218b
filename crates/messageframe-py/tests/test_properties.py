"""Property tests with Python's msgpack as the independent reader and writer
(hypothesis, fixed profile in conftest.py)."""

from __future__ import annotations

import math
import struct
from typing import Any

import msgpack
import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import messageframe as mf

SEP = "\x1f"
TAGS = {bool: 40, int: 10, float: 20, str: 30}

u64 = st.integers(0, 2**64 - 1)
u32 = st.integers(0, 2**32 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
u16 = st.integers(0, 2**16 - 1)
headers = st.fixed_dictionaries(dict(timestamp=u64, counter=u64, source=u32, target=u32, message_id=i32,
                                     message_type=i32, version=u16, flags=u16))
text = st.text(st.characters(codec="utf-8"), max_size=40)
devices = st.text(st.characters(codec="utf-8", exclude_characters=SEP), max_size=12)

# Any MessagePack value, for unknown-tag payloads.
mp_values = st.recursive(
    # Floats of 32 bits: msgpack can write them as float32 or float64 alike.
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(width=32) | text | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=10,
)
unknown_tags = st.integers(-(2**63), 2**64 - 1).filter(lambda t: t not in (10, 20, 30, 40))
unknowns = st.builds(lambda tag, v: mf.Unknown(tag, msgpack.packb(v)), unknown_tags, mp_values)
values = (st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | text | unknowns)
params = st.lists(st.tuples(devices, text, values), max_size=30)
attachments = st.lists(st.tuples(text, st.binary(max_size=300)), max_size=3)


def build(header: dict[str, int], ps: list[tuple[str, str, Any]], atts: list[tuple[str, bytes]]) -> mf.Frame:
    f = mf.Frame(**header)
    for d, p, v in ps:
        f.add(d, p, v)
    for n, data in atts:
        f.add_attachment(n, data)
    return f


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def header_list(h: dict[str, int]) -> list[int]:
    return [h["timestamp"], h["counter"], h["source"], h["target"], h["message_id"], h["message_type"],
            h["version"], h["flags"]]


@given(headers, params, attachments)
def test_msgpack_reads_exactly_what_we_write(header: dict[str, int], ps: list, atts: list) -> None:
    data = build(header, ps, atts).encode()
    top = msgpack.unpackb(data, raw=False, strict_map_key=False, object_pairs_hook=lambda kv: kv,
                          use_list=True)
    h, m, a = top
    assert h == header_list(header)
    assert len(m) == len(ps)
    for (key, pair), (d, p, v) in zip(m, ps):
        assert key == d + SEP + p
        tag, wire = pair
        if isinstance(v, mf.Unknown):
            assert tag == v.tag
            # Compared re-packed, so that NaNs inside compare equal.
            again = msgpack.unpackb(v.raw, raw=False, strict_map_key=False, object_pairs_hook=lambda kv: kv)
            assert msgpack.packb(wire) == msgpack.packb(again)
        elif isinstance(v, bool):
            assert (tag, wire) == (40, v)
        elif isinstance(v, int):
            assert (tag, wire) == (10, v)
        elif isinstance(v, float):
            assert tag == 20
            # Integral doubles travel as integers (as msgpack-c writes them).
            assert same(float(wire), v) or (v == 0 and wire == 0 and math.copysign(1, v) > 0)
            if isinstance(wire, int):
                assert v == int(v) and not (v == 0 and math.copysign(1, v) < 0)
        else:
            assert (tag, wire) == (30, v)
    assert [(n, bytes(b)) for n, b in a] == [(n, d) for n, d in atts]


@given(headers, params, attachments)
def test_decode_of_encode_is_the_identity(header: dict[str, int], ps: list, atts: list) -> None:
    f = build(header, ps, atts)
    data = f.encode()
    back = mf.Frame.decode(data)
    assert back.header.to_dict() == header
    assert len(back.params()) == len(ps)
    for (d, p, v), (d2, p2, v2) in zip(ps, back.params()):
        assert (d, p) == (d2, p2) and same(v, v2), ((d, p, v), v2)
    assert [(n, bytes(b)) for n, b in back.attachments()] == atts
    assert back.encode() == data
    assert [f2.encode() for f2 in mf.iter_frames(data * 3)] == [data] * 3


@given(headers, params, attachments, st.booleans(), st.lists(mp_values, max_size=2))
def test_we_read_what_msgpack_writes(header: dict[str, int], ps: list, atts: list, single_float: bool,
                                      extra: list) -> None:
    # msgpack writes the same content its own way: floats as float64 or
    # float32, doubles never as integers, and extra trailing elements that a
    # reader must skip.
    if single_float:
        assume(all(not isinstance(v, float) or not math.isfinite(v) or abs(v) < 3.4e38 for _, _, v in ps))
    m = {}
    first: dict[str, Any] = {}
    for d, p, v in ps:
        key = d + SEP + p
        if isinstance(v, mf.Unknown):
            wire = [v.tag, msgpack.unpackb(v.raw, raw=False, strict_map_key=False)]
        else:
            wire = [TAGS[type(v)], v]
        if key not in m:
            m[key] = wire + extra
            first[key] = v
    top = [header_list(header) + extra, m, [[n, d] + extra for n, d in atts]] + extra
    data = msgpack.packb(top, use_bin_type=True, use_single_float=single_float)
    f = mf.Frame.decode(data)
    assert f.header.to_dict() == header
    assert len(f) == len(m)
    for key, v in first.items():
        d, _, p = key.partition(SEP)
        got = f[d, p]
        if isinstance(v, float) and single_float:
            with np.errstate(over="ignore"):
                assert same(got, float(np.float32(v))), (key, got, v)
        elif isinstance(v, mf.Unknown):
            # The raw bytes kept are exactly what msgpack wrote for the value.
            value = msgpack.unpackb(v.raw, raw=False, strict_map_key=False)
            assert got.tag == v.tag
            assert got.raw == msgpack.packb(value, use_bin_type=True, use_single_float=single_float)
        else:
            assert same(got, v), (key, got, v)
    assert [(n, bytes(b)) for n, b in f.attachments()] == atts


@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_decode_error(data: bytes) -> None:
    try:
        f = mf.Frame.decode(data)
    except mf.DecodeError as e:
        assert 0 <= e.offset <= len(data)
        assert e.kind in {"truncated", "unexpected_type", "too_few_elements", "integer_out_of_range",
                          "invalid_utf8", "duplicate_key", "trailing_bytes", "limit_exceeded"}
    else:
        assert mf.Frame.decode(f.encode()) == f or any(
            isinstance(v, float) and math.isnan(v) for _, _, v in f.params())
