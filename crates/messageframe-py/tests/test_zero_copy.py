"""Attachments are never copied: decoded ones are read-only memoryviews into
the input, added ones are views of the caller's buffer until encode."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import messageframe as mf

DTYPES = [np.uint8, np.int8, np.int16, np.uint32, np.int64, np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
def test_numpy_attachments_round_trip_in_every_dtype(dtype: type) -> None:
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(1000) * 100).astype(dtype) if np.dtype(dtype).kind != "c" else (
        rng.standard_normal(1000) + 1j * rng.standard_normal(1000)).astype(dtype)
    f = mf.Frame(message_id=1)
    f.add_attachment("data", a)
    back = mf.Frame.decode(f.encode())
    b = np.frombuffer(back.attachment("data"), dtype)
    assert b.dtype == a.dtype and np.array_equal(a, b)


def test_decoded_attachment_shares_memory_with_the_input() -> None:
    iq = (np.arange(4096) * (1 + 1j)).astype(np.complex64)
    f = mf.Frame()
    f.add("sdr", "rate", 2.4e6)
    f.add_attachment("iq", iq)
    data = f.encode()
    back = mf.Frame.decode(data)
    view = np.frombuffer(back.attachment("iq"), np.complex64)
    assert np.shares_memory(view, np.frombuffer(data, np.uint8))
    assert np.array_equal(view, iq)
    mv = back.attachment("iq")
    assert mv.readonly and mv.format == "B" and mv.ndim == 1 and mv.nbytes == iq.nbytes
    assert not view.flags.writeable
    with pytest.raises(TypeError):
        mv[0] = 1  # type: ignore[index]


def test_an_attachment_added_to_a_decoded_frame_sits_beside_the_decoded_ones() -> None:
    f = mf.Frame()
    f.add_attachment("a", b"first")
    f.add_attachment("b", b"second")
    data = f.encode()
    back = mf.Frame.decode(data)
    extra = np.arange(16, dtype=np.uint8)
    back.add_attachment("c", extra)
    got = back.attachments()
    assert [(n, bytes(v)) for n, v in got] == [("a", b"first"), ("b", b"second"), ("c", extra.tobytes())]
    # The decoded two still view the input, the added one the caller's array.
    src = np.frombuffer(data, np.uint8)
    assert np.shares_memory(np.frombuffer(back.attachment("b"), np.uint8), src)
    assert np.shares_memory(np.frombuffer(back.attachment("c"), np.uint8), extra)
    assert mf.Frame.decode(back.encode()).attachments()[2][0] == "c"
    # Cleared, then given new attachments: only those.
    back.clear()
    back.add_attachment("d", b"x")
    assert [(n, bytes(v)) for n, v in back.attachments()] == [("d", b"x")]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "numpy"])
def test_every_input_type_is_shared_not_copied(kind: str) -> None:
    f = mf.Frame()
    f.add_attachment("x", np.arange(256, dtype=np.uint8))
    data = f.encode()
    src = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(bytearray(data)),
           "numpy": np.frombuffer(bytearray(data), np.uint8)}[kind]
    back = mf.Frame.decode(src)
    att = np.frombuffer(back.attachment("x"), np.uint8)
    assert np.shares_memory(att, np.frombuffer(src, np.uint8))
    assert np.array_equal(att, np.arange(256, dtype=np.uint8))


def test_a_writable_input_cannot_be_resized_while_a_frame_views_it() -> None:
    f = mf.Frame()
    f.add_attachment("x", b"abc")
    buf = bytearray(f.encode())
    back = mf.Frame.decode(buf)
    with pytest.raises(BufferError):
        buf.extend(b"more")
    att = back.attachment("x")
    del back
    with pytest.raises(BufferError):  # the memoryview still holds it
        buf.extend(b"more")
    att.release()
    gc.collect()
    buf.extend(b"more")  # free again


def test_an_attachment_keeps_its_buffer_alive_after_the_frame_is_gone() -> None:
    f = mf.Frame()
    f.add_attachment("x", np.full(100_000, 7, np.uint8))
    data = f.encode()
    back = mf.Frame.decode(bytes(data))
    view = np.frombuffer(back.attachment("x"), np.uint8)
    del back, f
    gc.collect()
    assert view.sum() == 700_000


def test_added_attachments_are_not_copied_before_encode() -> None:
    a = np.zeros(8, np.float32)
    f = mf.Frame()
    f.add_attachment("a", a)
    assert np.shares_memory(np.frombuffer(f.attachment("a"), np.float32), a)
    a[3] = 42.0  # written after add_attachment: what encode reads
    back = mf.Frame.decode(f.encode())
    assert np.frombuffer(back.attachment("a"), np.float32)[3] == 42.0
    # The frame holds a reference: the array lives as long as the frame.
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is not None
    del f
    gc.collect()
    assert ref() is None


def test_multidimensional_and_zero_size_arrays() -> None:
    img = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    f = mf.Frame()
    f.add_attachment("img", img)
    f.add_attachment("none", np.zeros(0, np.float64))
    back = mf.Frame.decode(f.encode())
    assert np.array_equal(np.frombuffer(back.attachment("img"), np.int16).reshape(2, 3, 4), img)
    assert back.attachment("none").nbytes == 0


def test_a_non_contiguous_buffer_is_refused_not_copied() -> None:
    a = np.arange(100, dtype=np.float64)[::2]
    with pytest.raises(BufferError, match="C-contiguous"):
        mf.Frame().add_attachment("a", a)
    with pytest.raises(BufferError, match="C-contiguous"):
        mf.Frame.decode(np.arange(100, dtype=np.uint8)[::2])
    with pytest.raises(BufferError):
        mf.Frame().add_attachment("f", np.asfortranarray(np.ones((3, 4))))
    with pytest.raises(TypeError):
        mf.Frame().add_attachment("n", 12)  # type: ignore[arg-type]


def test_encode_is_the_same_for_every_buffer_type() -> None:
    data = bytes(range(256)) * 3
    outs = set()
    for buf in [data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8),
                np.frombuffer(data, np.uint16), np.frombuffer(data, np.uint8).reshape(3, 256)]:
        f = mf.Frame(timestamp=1)
        f.add_attachment("d", buf)
        outs.add(f.encode())
    assert len(outs) == 1


def test_a_large_attachment_decodes_without_touching_its_bytes() -> None:
    big = np.ones(8 << 20, np.uint8)  # 8 MiB
    f = mf.Frame()
    f.add_attachment("big", big)
    data = f.encode()
    back = mf.Frame.decode(data)
    assert np.shares_memory(np.frombuffer(back.attachment("big"), np.uint8), np.frombuffer(data, np.uint8))
