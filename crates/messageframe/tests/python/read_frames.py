"""Reads messageframe frames with Python's `msgpack` package, using only what
docs/wire-format.md says: a frame is [header, params, attachments]; a key is
device + 0x1F + param (split at the first 0x1F); a value is [tag, value].

Usage: read_frames.py FILE...   Prints one JSON description per frame.
"""
import json
import struct
import sys

import msgpack

TYPES = {10: "int64", 20: "double", 30: "string", 40: "bool"}


def describe(frame):
    header, params, attachments = frame[0], frame[1], frame[2]
    assert isinstance(params, dict), "parameters must be a map"
    out_params = []
    for key, pair in params.items():
        device, sep, param = key.partition("\x1f")
        if not sep:
            device, param = "", key
        tag, value = pair[0], pair[1]
        kind = TYPES.get(tag, "unknown")
        if kind == "double":
            # Integral doubles arrive as ints: convert, then send exact bits.
            value = struct.unpack("<Q", struct.pack("<d", float(value)))[0]
        elif kind == "int64":
            assert isinstance(value, int) and not isinstance(value, bool)
        elif kind == "bool":
            assert isinstance(value, bool)
        elif kind == "string":
            assert isinstance(value, str)
        else:
            # The tag exactly, and the value re-packed by Python's msgpack:
            # the test compares its content with what was written.
            value = {"tag": tag, "raw": msgpack.packb(value).hex()}
        out_params.append({"device": device, "param": param, "type": kind, "value": value})
    out_atts = []
    for name, data in attachments:
        assert isinstance(data, bytes), "attachment data must be bin"
        out_atts.append({"name": name, "len": len(data), "hex_prefix": data[:16].hex()})
    return {"header": list(header), "params": out_params, "attachments": out_atts}


def main():
    for path in sys.argv[1:]:
        with open(path, "rb") as f:
            data = f.read()
        frame = msgpack.unpackb(data, raw=False, strict_map_key=False)
        assert len(frame) == 3, "a frame is an array of 3 elements"
        print(json.dumps(describe(frame)))


if __name__ == "__main__":
    main()
