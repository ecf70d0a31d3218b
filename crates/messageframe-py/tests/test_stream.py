"""iter_frames over buffers, files and sockets: every frame in order, each as
soon as it is complete, and a truncated tail or a malformed frame raising
DecodeError at the end, after the frames before it."""

from __future__ import annotations

import io
import mmap
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import messageframe as mf


def frames(n: int = 20, attachment: int = 0) -> list[mf.Frame]:
    out = []
    for i in range(n):
        f = mf.Frame(message_id=i, counter=i, timestamp=1000 + i)
        f.add("dev", "i", i)
        f.add("dev", "name", f"frame {i}" * (i % 5))
        if attachment:
            f.add_attachment("iq", np.full(attachment, i % 256, np.uint8))
        out.append(f)
    return out


def stream(fs: list[mf.Frame]) -> bytes:
    return b"".join(f.encode() for f in fs)


def counters(it) -> list[int]:
    return [f.header.counter for f in it]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "numpy"])
def test_buffers_yield_every_frame_with_attachments_in_place(kind: str) -> None:
    data = stream(frames(10, attachment=1000))
    src = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data),
           "numpy": np.frombuffer(data, np.uint8)}[kind]
    got = list(mf.iter_frames(src))
    assert [f.header.counter for f in got] == list(range(10))
    whole = np.frombuffer(src, np.uint8)
    for i, f in enumerate(got):
        att = np.frombuffer(f.attachment("iq"), np.uint8)
        assert np.shares_memory(att, whole) and (att == i).all()


def test_an_empty_source_yields_nothing() -> None:
    assert list(mf.iter_frames(b"")) == []
    assert list(mf.iter_frames(io.BytesIO(b""))) == []


def test_a_truncated_tail_raises_after_the_complete_frames() -> None:
    data = stream(frames(5))
    last = len(frames(5)[-1].encode())
    for cut in range(1, last):
        for src in (data[:-cut], io.BytesIO(data[:-cut])):
            it = mf.iter_frames(src)
            assert counters(next(it) for _ in range(4)) == [0, 1, 2, 3]
            with pytest.raises(mf.DecodeError) as e:
                next(it)
            assert e.value.kind == "truncated"
            assert len(data) - last <= e.value.offset <= len(data) - cut
            with pytest.raises(StopIteration):  # finished after the error
                next(it)


def test_a_malformed_frame_raises_with_its_stream_offset() -> None:
    good = stream(frames(3))
    bad = bytearray(frames(1)[0].encode())
    bad[1] = 0xC1  # the header array's marker: reserved
    for src in (good + bytes(bad) + good, io.BytesIO(good + bytes(bad) + good)):
        it = mf.iter_frames(src)
        assert counters(next(it) for _ in range(3)) == [0, 1, 2]
        with pytest.raises(mf.DecodeError) as e:
            next(it)
        assert e.value.offset == len(good) + 1
        assert f"at byte {len(good) + 1}" in str(e.value)


def test_files_are_read_incrementally(tmp_path: Path) -> None:
    fs = frames(200, attachment=3000)  # about 600 KB: several reads
    path = tmp_path / "frames.mfb"
    path.write_bytes(stream(fs))
    with open(path, "rb") as f:
        got = list(mf.iter_frames(f))
    assert [g.encode() for g in got] == [f.encode() for f in fs]
    with open(path, "rb", buffering=0) as raw:
        assert counters(mf.iter_frames(raw)) == list(range(200))
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        got = list(mf.iter_frames(m))
        assert counters(got) == list(range(200))
        del got


class Trickle:
    """A reader with only read(), returning at most `chunk` bytes a call."""

    def __init__(self, data: bytes, chunk: int) -> None:
        self.data, self.chunk, self.pos, self.calls = data, chunk, 0, 0

    def read(self, n: int) -> bytes:
        self.calls += 1
        b = self.data[self.pos:self.pos + min(n, self.chunk)]
        self.pos += len(b)
        return b


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_frames_split_across_reads_of_any_size(chunk: int) -> None:
    fs = frames(12, attachment=500)
    src = Trickle(stream(fs), chunk)
    assert [g.encode() for g in mf.iter_frames(src)] == [f.encode() for f in fs]


def test_each_frame_is_yielded_as_soon_as_its_last_byte_arrives() -> None:
    fs = frames(3)
    data = stream(fs)
    first = len(fs[0].encode())
    src = Trickle(data, 1)
    it = mf.iter_frames(src)
    next(it)
    assert src.pos == first  # not one byte more was read


def test_a_reader_returning_other_than_bytes_is_a_type_error() -> None:
    class Bad:
        def read(self, n: int) -> str:
            return "text"

    with pytest.raises(TypeError, match="bytes"):
        next(mf.iter_frames(Bad()))
    with pytest.raises(TypeError):
        mf.iter_frames(42)  # type: ignore[arg-type]


def serve(data: bytes, pieces: list[int], delay: float = 0.0) -> tuple[socket.socket, threading.Thread]:
    """A loopback TCP connection whose peer sends `data` in pieces."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def run() -> None:
        conn, _ = listener.accept()
        with conn:
            pos = 0
            for n in pieces:
                conn.sendall(data[pos:pos + n])
                pos += n
                if delay:
                    time.sleep(delay)
            conn.sendall(data[pos:])
        listener.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    return client, t


def test_sockets_yield_frames_as_they_arrive() -> None:
    fs = frames(50, attachment=20_000)
    data = stream(fs)
    client, t = serve(data, [1, 2, 100, 30_000, 5] * 20, delay=0.0005)
    with client:
        got = list(mf.iter_frames(client))
    t.join(10)
    assert [g.encode() for g in got] == [f.encode() for f in fs]


def test_a_socket_closed_mid_frame_raises_truncated_at_the_end() -> None:
    fs = frames(4, attachment=100_000)
    data = stream(fs)
    cut = data[: len(data) - 50_000]
    client, t = serve(cut, [70_000])
    with client:
        it = mf.iter_frames(client)
        assert counters(next(it) for _ in range(3)) == [0, 1, 2]
        with pytest.raises(mf.DecodeError) as e:
            next(it)
    t.join(10)
    assert e.value.kind == "truncated"
    assert "in attachment #0" in str(e.value)


def test_a_large_frame_over_a_socket_is_read_whole() -> None:
    f = mf.Frame()
    big = np.arange(3 << 20, dtype=np.uint8)
    f.add_attachment("big", big)
    data = f.encode()
    client, t = serve(data, [10, 100_000])
    with client:
        (got,) = list(mf.iter_frames(client))
    t.join(10)
    assert np.array_equal(np.frombuffer(got.attachment("big"), np.uint8), big)


def test_peek_header_and_iter_frames_agree() -> None:
    fs = frames(5)
    data = stream(fs)
    pos = 0
    for f in mf.iter_frames(data):
        assert mf.peek_header(data[pos:]) == f.header
        pos += len(f.encode())
