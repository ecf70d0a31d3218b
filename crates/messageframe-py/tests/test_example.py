"""The GNU Radio-style example (examples/gnuradio_iq.py) against a real
`mframe listen`: IQ frames over TCP, read back and checked sample by
sample. The mframe binary comes from $MFRAME or the workspace's target dir
(scripts/test builds it); without it the test fails, saying how to get it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from conftest import ROOT

EXAMPLE = ROOT / "crates" / "messageframe-py" / "examples" / "gnuradio_iq.py"


def load_example():
    spec = importlib.util.spec_from_file_location("gnuradio_iq", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gnuradio_iq"] = module
    spec.loader.exec_module(module)
    return module


def test_iq_frames_go_through_mframe_listen_and_come_back_intact(capsys) -> None:
    example = load_example()
    mframe = example.find_mframe(None)  # raises, saying what to build, if missing
    example.run(mframe, blocks=40, samples=4096)
    assert "40 IQ frames of 4096 samples sent to mframe listen and read back intact" in capsys.readouterr().out


def test_the_sink_attaches_samples_without_copying() -> None:
    import numpy as np

    import messageframe as mf

    example = load_example()

    class Capture:
        def __init__(self) -> None:
            self.data = b""

        def sendall(self, b: bytes) -> None:
            self.data += b

    cap = Capture()
    sink = example.IQFrameSink(cap, source_id=3, center_freq=1e9, sample_rate=1e6, gain_db=10.0)
    block = example.SignalSource(0.1, 0.01).block(256)
    assert sink.work([block], []) == 256
    (frame,) = list(mf.iter_frames(cap.data))
    assert frame["sdr_rx", "samples"] == 256 and frame.header.source == 3
    iq = np.frombuffer(frame.attachment("iq"), np.complex64)
    assert np.array_equal(iq, block)
    assert np.shares_memory(iq, np.frombuffer(cap.data, np.uint8))
