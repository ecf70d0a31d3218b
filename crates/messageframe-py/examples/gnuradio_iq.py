"""A GNU Radio-style IQ sink: complex64 sample blocks, as a flowgraph's
`work()` receives them, go out over TCP as messageframe frames (the samples
as a zero-copy attachment, the radio's settings as parameters), to
`mframe listen`, which prints each frame it receives as a JSON line; the
example reads those lines back and checks every sample.

    python gnuradio_iq.py [--mframe PATH] [--blocks N] [--samples N]

Without GNU Radio installed, the block is a plain class with GNU Radio's
`work(input_items, output_items)` signature, fed by a signal source that
makes a tone plus noise, so the example runs anywhere numpy does. In a
real flowgraph, `IQFrameSink` would subclass `gr.sync_block` with
`in_sig=[numpy.complex64]`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import messageframe as mf

# Application message ids and types (users pass their own enums).
MSG_IQ_BLOCK = 0x1A
TYPE_STREAM = 1


class SignalSource:
    """A tone at `freq` (relative to the sample rate) plus Gaussian noise,
    in blocks of complex64 samples (GNU Radio's sig_source_c + noise)."""

    def __init__(self, freq: float, noise: float, seed: int = 1) -> None:
        self.freq, self.noise, self.phase = freq, noise, 0
        self.rng = np.random.default_rng(seed)

    def block(self, n: int) -> np.ndarray:
        t = np.arange(self.phase, self.phase + n)
        self.phase += n
        tone = np.exp(2j * np.pi * self.freq * t)
        noise = self.noise * (self.rng.standard_normal(n) + 1j * self.rng.standard_normal(n))
        return (tone + noise).astype(np.complex64)


class IQFrameSink:
    """A sync block's sink: each `work()` call sends its input block as one
    frame. The samples are attached without a copy (`add_attachment` takes
    the array's buffer); the frame carries the tuning and a sample counter
    so a receiver can place the block in time."""

    def __init__(self, sock: socket.socket, source_id: int, center_freq: float, sample_rate: float,
                 gain_db: float) -> None:
        self.sock = sock
        self.source_id = source_id
        self.settings = {"center_freq_hz": center_freq, "sample_rate_sps": sample_rate, "rx_gain_db": gain_db}
        self.counter = 0
        self.samples = 0

    def work(self, input_items: list[np.ndarray], output_items: list[np.ndarray]) -> int:
        iq = input_items[0]
        frame = mf.Frame(message_id=MSG_IQ_BLOCK, message_type=TYPE_STREAM, source=self.source_id,
                         target=1, counter=self.counter)
        for name, value in self.settings.items():
            frame.add("sdr_rx", name, value)
        frame.add("sdr_rx", "first_sample", self.samples)
        frame.add("sdr_rx", "samples", len(iq))
        frame.add("sdr_rx", "overflow", False)
        frame.add("sdr_rx", "format", "cf32_le")
        frame.add_attachment("iq", iq)
        self.sock.sendall(frame.encode())
        self.counter += 1
        self.samples += len(iq)
        return len(iq)


def find_mframe(explicit: str | None) -> str:
    """The mframe binary: --mframe, $MFRAME, the workspace's target dir, or PATH."""
    root = Path(__file__).resolve().parents[3]
    for candidate in [explicit, os.environ.get("MFRAME"), root / "target" / "debug" / "mframe",
                      root / "target" / "release" / "mframe", shutil.which("mframe")]:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise FileNotFoundError("mframe not found: build it with `cargo build -p mframe`, or pass --mframe PATH")


def start_listener(mframe: str) -> tuple[subprocess.Popen, tuple[str, int]]:
    """`mframe listen 127.0.0.1:0 --with-data`, and the address it took."""
    proc = subprocess.Popen([mframe, "listen", "127.0.0.1:0", "--with-data"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if "listening on" in line:
            host, port = line.rsplit("listening on", 1)[1].strip().rsplit(":", 1)
            return proc, (host, int(port))
    proc.kill()
    raise RuntimeError("mframe listen did not say where it listens")


def run(mframe: str, blocks: int, samples: int) -> None:
    listener, addr = start_listener(mframe)
    sent: list[np.ndarray] = []
    try:
        source = SignalSource(freq=0.05, noise=0.1)
        with socket.create_connection(addr, timeout=10) as sock:
            sink = IQFrameSink(sock, source_id=7, center_freq=433.92e6, sample_rate=2.4e6, gain_db=38.6)
            for _ in range(blocks):
                block = source.block(samples)
                sent.append(block)
                sink.work([block], [])
        # Read back what mframe printed: one JSON line per frame.
        assert listener.stdout is not None
        first = 0
        for i, block in enumerate(sent):
            line = listener.stdout.readline()
            if not line:
                raise RuntimeError(f"mframe listen printed {i} frames, {blocks} were sent")
            check(json.loads(line), i, first, block)
            first += len(block)
    finally:
        listener.terminate()
        try:
            listener.wait(10)
        except subprocess.TimeoutExpired:
            listener.kill()
    print(f"{blocks} IQ frames of {samples} samples sent to mframe listen and read back intact")


def check(printed: dict, i: int, first_sample: int, block: np.ndarray) -> None:
    """One frame as `mframe listen` printed it (the dump JSON schema,
    docs/cli.md) against the block that was sent."""
    header = printed["header"]
    assert (header["counter"], header["source"], header["message_id"]) == (i, 7, MSG_IQ_BLOCK), header
    params = {(p["device"], p["param"]): p["value"] for p in printed["params"]}
    assert params[("sdr_rx", "first_sample")] == first_sample
    assert params[("sdr_rx", "samples")] == len(block)
    assert params[("sdr_rx", "center_freq_hz")] == 433.92e6
    (att,) = printed["attachments"]
    assert att["name"] == "iq" and att["len"] == block.nbytes
    got = np.frombuffer(base64.b64decode(att["data"]), np.complex64)
    assert np.array_equal(got, block), f"frame {i}: samples differ"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mframe", help="the mframe binary (default: $MFRAME, target/debug/mframe, PATH)")
    p.add_argument("--blocks", type=int, default=50)
    p.add_argument("--samples", type=int, default=4096)
    a = p.parse_args(argv)
    run(find_mframe(a.mframe), a.blocks, a.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
