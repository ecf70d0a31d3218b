"""The interpreter is released while large frames decode and encode, and
frames are safe to share between threads."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import messageframe as mf


def big_frame(params: int = 200_000) -> mf.Frame:
    d: dict[str, dict[str, object]] = {}
    for k in range(params):
        d.setdefault(f"device_{k % 64}", {})[f"parameter_{k}"] = (k * 1.5 + 0.25, k, k % 3 == 0, f"v{k}")[k % 4]
    return mf.Frame.from_dict(d, timestamp=1)


def others_ran_during(work: Callable[[], object], calls: int = 3) -> int:
    """How many times another Python thread ran while `work` was inside the
    extension. With a switch interval of 10 s the interpreter never takes
    the GIL from a thread that holds it: the other thread can only run if
    `work` releases it. The spinner itself gives the GIL back at every turn
    (time.sleep(0) releases it), so `work`'s thread never waits for it."""
    inside = threading.Event()
    stop = threading.Event()
    ticks = [0]

    def spin() -> None:
        while not stop.is_set():
            if inside.is_set():
                ticks[0] += 1
            time.sleep(0)

    old = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.01)  # let the spinner start (sleep releases the GIL)
        for _ in range(calls):
            inside.set()
            work()
            inside.clear()
    finally:
        stop.set()
        sys.setswitchinterval(old)
        t.join()
    return ticks[0]


def test_decoding_a_large_frame_releases_the_gil() -> None:
    data = big_frame().encode()
    assert others_ran_during(lambda: mf.Frame.decode(data)) > 0


def test_encoding_a_large_frame_releases_the_gil() -> None:
    f = big_frame()
    assert others_ran_during(f.encode) > 0


def test_the_measurement_sees_a_call_that_holds_the_gil() -> None:
    # The control: the same measurement around work that keeps the GIL
    # (building a frame from a dict needs Python objects throughout).
    d = {f"d{k % 8}": {} for k in range(8)}
    for k in range(100_000):
        d[f"d{k % 8}"][f"p{k}"] = k
    assert others_ran_during(lambda: mf.Frame.from_dict(d)) == 0


def test_frames_decode_in_parallel_threads() -> None:
    fs = []
    for i in range(64):
        f = mf.Frame(counter=i)
        for k in range(200):
            f.add(f"d{k % 4}", f"p{k}", k * i)
        f.add_attachment("iq", np.full(1000, i, np.complex64))
        fs.append(f.encode())

    def work(i: int) -> bool:
        for _ in range(20):
            g = mf.Frame.decode(fs[i])
            if g.header.counter != i or g["d3", "p199"] != 199 * i:
                return False
            if not (np.frombuffer(g.attachment("iq"), np.complex64) == i).all():
                return False
        return True

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(64)))


def test_one_frame_read_by_many_threads() -> None:
    f = mf.Frame.decode(big_frame(20_000).encode())
    want = f.to_dict()

    def read(_: int) -> bool:
        return f.to_dict() == want and f.find("device_1", "parameter_1") == 1 and len(f.encode()) > 0

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(read, range(32)))


def test_a_frame_built_in_one_thread_is_encoded_in_another() -> None:
    out: list[bytes] = []
    f = mf.Frame(timestamp=1)
    f.add("a", "b", 1)
    t = threading.Thread(target=lambda: out.append(f.encode()))
    t.start()
    t.join()
    assert mf.Frame.decode(out[0]) == f


def test_changing_a_frame_while_another_thread_encodes_it_raises_not_corrupts() -> None:
    f = big_frame(100_000)
    before = f.encode()
    errors: list[BaseException] = []
    stop = threading.Event()

    def mutate() -> None:
        while not stop.is_set():
            try:
                f.set("device_0", "parameter_0", 0.25)  # the value it already has
            except RuntimeError as e:  # borrowed by the encoding thread
                errors.append(e)

    t = threading.Thread(target=mutate)
    t.start()
    try:
        outs = [f.encode() for _ in range(5)]
    finally:
        stop.set()
        t.join()
    assert all(o == before for o in outs)
    assert all("borrow" in str(e) for e in errors), errors[:1]


def test_iter_frames_over_a_socket_lets_other_threads_run() -> None:
    import socket

    a, b = socket.socketpair()
    f = mf.Frame(timestamp=1)
    f.add("x", "y", 1)
    got: list[mf.Frame] = []
    t = threading.Thread(target=lambda: got.extend(mf.iter_frames(a)))
    t.start()
    time.sleep(0.05)  # the reader is blocked in recv_into, without the GIL
    b.sendall(f.encode() * 3)
    b.close()
    t.join(10)
    a.close()
    assert [g.encode() for g in got] == [f.encode()] * 3


@pytest.mark.parametrize("n", [1, 7])
def test_a_shared_iterator_is_safe(n: int) -> None:
    data = b"".join(mf.Frame(counter=i, timestamp=1).encode() for i in range(2000))
    it = mf.iter_frames(data)
    seen: list[int] = []
    lock = threading.Lock()

    def drain() -> None:
        while True:
            try:
                f = next(it)
            except StopIteration:
                return
            except RuntimeError:  # another thread is inside next()
                continue
            with lock:
                seen.append(f.header.counter)

    threads = [threading.Thread(target=drain) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == list(range(2000))
