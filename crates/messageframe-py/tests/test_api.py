"""The API of issue #21, name by name."""

from __future__ import annotations

import math
import pickle
import time

import pytest

import messageframe as mf

BASIC = bytes.fromhex(
    "9398cf0000018bcfe5680001326" "3cd03e9010100"
    "82b4" + "sensor_alpha\x1fvoltage".encode().hex() + "9214cb4029333333333333"
    "b6" + "device_core\x1ffw_version".encode().hex() + "921ea6" + b"v3.2.1".hex() + "90"
)


def test_the_quick_start_frame_encodes_to_the_documented_bytes(basic_frame: mf.Frame) -> None:
    # docs/wire-format.md, "Example": 86 bytes.
    assert basic_frame.encode() == BASIC
    assert len(BASIC) == 86


def test_frame_constructor_takes_every_header_field_by_keyword() -> None:
    f = mf.Frame(message_id=-5, message_type=7, source=1, target=2, timestamp=123, counter=9, version=3, flags=0x8001)
    h = f.header
    assert (h.timestamp, h.counter, h.source, h.target, h.message_id, h.message_type, h.version, h.flags) == (
        123, 9, 1, 2, -5, 7, 3, 0x8001)


def test_frame_defaults_are_zero_version_one_and_the_timestamp_now() -> None:
    before = int(time.time() * 1000)
    h = mf.Frame().header
    after = int(time.time() * 1000)
    assert before <= h.timestamp <= after
    assert (h.counter, h.source, h.target, h.message_id, h.message_type, h.version, h.flags) == (0, 0, 0, 0, 0, 1, 0)


@pytest.mark.parametrize(
    "field,value",
    [("source", -1), ("source", 2**32), ("target", 2**32), ("message_id", 2**31), ("message_type", -(2**31) - 1),
     ("version", 65536), ("flags", -1), ("counter", 2**64), ("timestamp", -1)],
)
def test_header_fields_out_of_range_are_overflow_errors(field: str, value: int) -> None:
    with pytest.raises(OverflowError):
        mf.Frame(**{field: value})


def test_header_is_immutable_and_replaced_whole(basic_frame: mf.Frame) -> None:
    h = basic_frame.header
    with pytest.raises(AttributeError):
        h.counter = 5  # type: ignore[misc]
    basic_frame.header = h.replace(counter=7, flags=3)
    assert basic_frame.header.counter == 7 and basic_frame.header.flags == 3
    assert basic_frame.header.source == 50
    assert mf.Frame.decode(basic_frame.encode()).header == basic_frame.header
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        h.replace(colour=1)
    assert h.to_dict() == dict(timestamp=1_700_000_000_000, counter=1, source=50, target=99, message_id=1001,
                               message_type=1, version=1, flags=0)
    assert hash(h) == hash(mf.Header(**h.to_dict()))
    assert pickle.loads(pickle.dumps(h)) == h
    assert "message_id=1001" in repr(h)


def test_update_timestamp_sets_now() -> None:
    f = mf.Frame(timestamp=5)
    f.update_timestamp()
    assert abs(f.header.timestamp - time.time() * 1000) < 60_000


def test_add_maps_python_types_to_wire_types() -> None:
    f = mf.Frame()
    f.add("d", "b", True)
    f.add("d", "i", -(2**63))
    f.add("d", "x", 2.5)
    f.add("d", "s", "Grüße 📡")
    back = mf.Frame.decode(f.encode())
    assert back.params() == [("d", "b", True), ("d", "i", -(2**63)), ("d", "x", 2.5), ("d", "s", "Grüße 📡")]
    assert type(back["d", "b"]) is bool and type(back["d", "i"]) is int and type(back["d", "x"]) is float


def test_integral_floats_stay_floats_and_bools_stay_bools() -> None:
    f = mf.Frame()
    f.add("d", "ten", 10.0)   # on the wire as the integer 10 under tag 20
    f.add("d", "zero", False)
    f.add("d", "neg_zero", -0.0)
    back = mf.Frame.decode(f.encode())
    assert back["d", "ten"] == 10.0 and type(back["d", "ten"]) is float
    assert back["d", "zero"] is False
    assert math.copysign(1.0, back["d", "neg_zero"]) == -1.0


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_an_int_outside_int64_is_an_overflow_error(value: int) -> None:
    f = mf.Frame()
    with pytest.raises(OverflowError, match="int64"):
        f.add("d", "p", value)
    assert len(f) == 0


@pytest.mark.parametrize("value,name", [(None, "NoneType"), (b"x", "bytes"), ([1], "list"), (1j, "complex"),
                                        (object(), "object")])
def test_any_other_value_type_is_a_type_error_naming_it(value: object, name: str) -> None:
    f = mf.Frame()
    with pytest.raises(TypeError, match=f"'{name}'"):
        f.add("d", "p", value)  # type: ignore[arg-type]
    assert len(f) == 0


def test_numpy_scalars_follow_the_rule() -> None:
    import numpy as np
    f = mf.Frame()
    f.add("d", "f64", np.float64(1.5))  # a float subclass: a double
    assert f["d", "f64"] == 1.5
    with pytest.raises(TypeError, match="numpy.int64"):
        f.add("d", "i64", np.int64(3))


def test_a_device_containing_the_separator_is_refused() -> None:
    with pytest.raises(ValueError, match="U\\+001F"):
        mf.Frame().add("a\x1fb", "p", 1)
    # A parameter may contain it: the key splits at the first separator.
    f = mf.Frame()
    f.add("a", "b\x1fc", 1)
    assert mf.Frame.decode(f.encode()).params() == [("a", "b\x1fc", 1)]


def test_find_getitem_contains_and_len() -> None:
    f = mf.Frame()
    f.add("sdr", "gain", 30.5)
    f.add("sdr", "gain", 99.0)  # a duplicate: kept, the first wins
    f.add("gps", "fix", True)
    assert len(f) == 3
    assert f.find("sdr", "gain") == 30.5
    assert f.find("sdr", "nope") is None
    assert f["gps", "fix"] is True
    assert ("gps", "fix") in f and ("gps", "x") not in f
    with pytest.raises(KeyError) as e:
        f["gps", "x"]
    assert e.value.args == (("gps", "x"),)
    for bad in ["gps", ("gps",), ("gps", "fix", "x"), (1, "fix")]:
        with pytest.raises(TypeError, match="tuples of two str"):
            f[bad]  # type: ignore[index]


def test_params_are_in_wire_order_with_duplicates() -> None:
    f = mf.Frame()
    for i in range(20):
        f.add(f"d{i % 3}", f"p{i}", i)
    f.add("d0", "p0", "again")
    back = mf.Frame.decode(f.encode())
    assert back.params() == [(f"d{i % 3}", f"p{i}", i) for i in range(20)] + [("d0", "p0", "again")]


def test_to_dict_groups_by_device_and_the_first_duplicate_wins() -> None:
    f = mf.Frame()
    f.add("a", "x", 1)
    f.add("b", "y", "s")
    f.add("a", "x", 2)
    f.add("a", "z", False)
    assert f.to_dict() == {"a": {"x": 1, "z": False}, "b": {"y": "s"}}
    assert mf.Frame.decode(f.encode()).to_dict() == f.to_dict()


def test_from_dict_builds_in_one_call_with_header_keywords() -> None:
    d = {"sdr_1": {"freq": 433.92e6, "locked": True}, "gps": {"sats": 11, "fix": "3D"}}
    f = mf.Frame.from_dict(d, message_id=3, source=4, target=5, timestamp=6, counter=7)
    assert f.to_dict() == d
    assert (f.header.message_id, f.header.source, f.header.target, f.header.timestamp, f.header.counter) == (
        3, 4, 5, 6, 7)
    assert [p[:2] for p in f.params()] == [("sdr_1", "freq"), ("sdr_1", "locked"), ("gps", "sats"), ("gps", "fix")]
    # Same bytes as adding one by one.
    g = mf.Frame(message_id=3, source=4, target=5, timestamp=6, counter=7)
    for dev, ps in d.items():
        for p, v in ps.items():
            g.add(dev, p, v)
    assert f.encode() == g.encode()


def test_from_dict_accepts_any_mapping_and_checks_types() -> None:
    from collections import OrderedDict
    from types import MappingProxyType

    f = mf.Frame.from_dict(MappingProxyType({"a": OrderedDict(x=1)}))
    assert f.to_dict() == {"a": {"x": 1}}
    with pytest.raises(TypeError, match="device names are str"):
        mf.Frame.from_dict({1: {"x": 1}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="parameter names are str"):
        mf.Frame.from_dict({"a": {2: 1}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="mappings"):
        mf.Frame.from_dict({"a": [1, 2]})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="'NoneType'"):
        mf.Frame.from_dict({"a": {"x": None}})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        mf.Frame.from_dict({}, colour=1)  # type: ignore[call-arg]


def test_set_replaces_in_place_and_update_only_changes_existing_keys() -> None:
    f = mf.Frame()
    f.add("d", "a", 1)
    f.add("d", "b", 2)
    f.set("d", "a", "one")
    f.set("d", "c", 3.0)
    assert f.params() == [("d", "a", "one"), ("d", "b", 2), ("d", "c", 3.0)]
    assert f.update("d", "b", True) is True
    assert f.update("d", "zz", 1) is False
    assert f.params() == [("d", "a", "one"), ("d", "b", True), ("d", "c", 3.0)]


def test_unknown_values_come_back_and_are_reencoded_unchanged() -> None:
    u = mf.Unknown(77, bytes([0x92, 0x01, 0xA1, ord("x")]))
    big = mf.Unknown(2**64 - 1, b"\xc0")
    neg = mf.Unknown(-(2**63), b"\xcd\x12\x34")
    f = mf.Frame(timestamp=1)
    f.add("u", "array", u)
    f.add("u", "max_tag", big)
    f.add("u", "min_tag", neg)
    data = f.encode()
    back = mf.Frame.decode(data)
    assert back["u", "array"] == u and back["u", "max_tag"] == big and back["u", "min_tag"] == neg
    assert back["u", "array"].tag == 77 and back["u", "array"].raw == bytes([0x92, 0x01, 0xA1, ord("x")])
    assert back.encode() == data
    assert hash(back["u", "array"]) == hash(u)
    assert pickle.loads(pickle.dumps(u)) == u
    assert repr(u) == "Unknown(tag=77, raw=b'\\x92\\x01\\xa1x')"


@pytest.mark.parametrize("tag,raw,msg", [(10, b"\x01", "known type"), (2**64, b"\xc0", "MessagePack integer"),
                                         (-(2**63) - 1, b"\xc0", "MessagePack integer"), (50, b"\x92\x01", "exactly one"),
                                         (50, b"", "exactly one"), (50, b"\xc0\xc0", "exactly one")])
def test_unknown_checks_its_tag_and_raw_value(tag: int, raw: bytes, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        mf.Unknown(tag, raw)


def test_clear_keeps_the_header() -> None:
    f = mf.Frame(message_id=4)
    f.add("a", "b", 1)
    f.add_attachment("x", b"123")
    f.clear()
    assert len(f) == 0 and f.attachments() == [] and f.header.message_id == 4


def test_frames_compare_pickle_and_repr(basic_frame: mf.Frame) -> None:
    back = mf.Frame.decode(basic_frame.encode())
    assert back == basic_frame
    assert back != mf.Frame() and back != "frame"
    assert pickle.loads(pickle.dumps(back)) == back
    assert repr(back) == ("<messageframe.Frame message_id=1001 message_type=1 source=50 target=99 counter=1: "
                          "2 parameters, 0 attachments>")


def test_attachments_by_name_in_order() -> None:
    f = mf.Frame()
    f.add_attachment("a", b"first")
    f.add_attachment("b", bytearray(b"second"))
    f.add_attachment("a", memoryview(b"third"))
    for frame in (f, mf.Frame.decode(f.encode())):
        assert [(n, bytes(v)) for n, v in frame.attachments()] == [("a", b"first"), ("b", b"second"), ("a", b"third")]
        assert bytes(frame.attachment("a")) == b"first"
        with pytest.raises(KeyError):
            frame.attachment("zz")
        assert frame.attachment("zz", None) is None
        with pytest.raises(TypeError):
            frame.attachment("zz", 1, 2)  # type: ignore[call-overload]


def test_peek_header_reads_only_the_header(basic_frame: mf.Frame) -> None:
    data = basic_frame.encode()
    assert mf.peek_header(data) == basic_frame.header
    # Only the first bytes matter: a frame cut after its header still peeks.
    assert mf.peek_header(data[:30]) == basic_frame.header
    assert mf.peek_header(bytearray(data)) == basic_frame.header
    with pytest.raises(mf.DecodeError) as e:
        mf.peek_header(data[:10])
    assert e.value.kind == "truncated"


def test_decode_error_is_a_value_error_with_offset_and_kind(basic_frame: mf.Frame) -> None:
    data = basic_frame.encode()
    with pytest.raises(ValueError):
        mf.Frame.decode(data[:-1])
    with pytest.raises(mf.DecodeError) as e:
        mf.Frame.decode(data + b"\x00")
    assert (e.value.kind, e.value.offset) == ("trailing_bytes", 86)
    assert "trailing" in str(e.value)
    with pytest.raises(mf.DecodeError) as e:
        mf.Frame.decode(b"")
    assert (e.value.kind, e.value.offset) == ("truncated", 0)
    assert str(e.value) == "input is empty: no frame at byte 0"
    err = pickle.loads(pickle.dumps(e.value))
    assert (type(err), err.kind, err.offset) == (mf.DecodeError, "truncated", 0)


def test_strict_decoding_rejects_duplicate_keys() -> None:
    f = mf.Frame()
    f.add("a", "b", 1)
    f.add("a", "b", 2)
    data = f.encode()
    assert mf.Frame.decode(data)["a", "b"] == 1
    with pytest.raises(mf.DecodeError) as e:
        mf.Frame.decode(data, strict=True)
    assert e.value.kind == "duplicate_key"


def test_decode_refuses_what_is_not_a_buffer() -> None:
    for bad in [None, 3, "text", [1, 2]]:
        with pytest.raises(TypeError):
            mf.Frame.decode(bad)  # type: ignore[arg-type]


def test_help_explains_the_api() -> None:
    for obj in [mf, mf.Frame, mf.Frame.decode, mf.Frame.attachment, mf.Frame.from_dict, mf.iter_frames,
                mf.peek_header, mf.Header, mf.Unknown, mf.DecodeError]:
        assert obj.__doc__ and len(obj.__doc__) > 40, obj
    assert "memoryview" in mf.Frame.attachment.__doc__
