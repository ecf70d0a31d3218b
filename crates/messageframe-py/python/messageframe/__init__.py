"""messageframe: schema-free, typed telemetry frames on MessagePack.

A frame has a header (timestamp, counter, source, target, message id and
type, version, flags), parameters addressed by a two-part key
(device, param) with typed values (int64, double, string, bool), and named
binary attachments. The wire format is plain MessagePack, byte-compatible
with the Rust and C++ MessageFrame libraries.

    >>> import messageframe as mf
    >>> frame = mf.Frame(message_id=1001, source=50, target=99)
    >>> frame.add("sensor_alpha", "voltage", 12.6)
    >>> frame.add_attachment("raw", b"\\x00\\x01\\x02")
    >>> back = mf.Frame.decode(frame.encode())
    >>> back["sensor_alpha", "voltage"]
    12.6
    >>> bytes(back.attachment("raw"))
    b'\\x00\\x01\\x02'

Decoding copies the parameters into the frame and leaves attachments in
the input buffer: `frame.attachment(name)` is a read-only memoryview into
it, so `numpy.frombuffer(frame.attachment("iq"), numpy.complex64)` shares
memory with the bytes that were decoded.

The code is Rust (the `messageframe` crate) behind pyo3; docs/python.md in
the repository describes the API, threading and performance.
"""

from ._messageframe import (
    DecodeError,
    Frame,
    FrameIterator,
    Header,
    Unknown,
    __version__,
    iter_frames,
    peek_header,
)

__all__ = [
    "DecodeError",
    "Frame",
    "FrameIterator",
    "Header",
    "Unknown",
    "__version__",
    "iter_frames",
    "peek_header",
]
