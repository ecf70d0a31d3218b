"""Hostile and malformed input: the committed fuzz corpus and regressions of
fuzz/, truncations and corruptions of valid frames. Every input decodes or
raises DecodeError, never anything else; whether it decodes is decided
independently by a reference reader written here from
docs/wire-format.md (a typed walk of the MessagePack markers, since
msgpack-python cannot tell str from bin once it has decoded them)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import msgpack
import pytest

import messageframe as mf
from conftest import FUZZ, interop_cases

I64 = (-(2**63), 2**63 - 1)
HEADER_RANGES = [(0, 2**64 - 1), (0, 2**64 - 1), (0, 2**32 - 1), (0, 2**32 - 1), (-(2**31), 2**31 - 1),
                 (-(2**31), 2**31 - 1), (0, 2**16 - 1), (0, 2**16 - 1)]
KINDS = {"truncated", "unexpected_type", "too_few_elements", "integer_out_of_range", "invalid_utf8",
         "duplicate_key", "trailing_bytes", "limit_exceeded", "capacity_exceeded"}


class Invalid(Exception):
    pass


class Reader:
    """The reference reader: what docs/wire-format.md says, nothing of
    messageframe."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise Invalid("truncated")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def be(self, k: int) -> int:
        return int.from_bytes(self.take(k), "big")

    def head(self) -> tuple[str, int]:
        """The next element's kind and its value or length, past its head
        (its payload or elements still to read)."""
        m = self.take(1)[0]
        if m <= 0x7F:
            return "int", m
        if m >= 0xE0:
            return "int", m - 0x100
        if m <= 0x8F:
            return "map", m & 0x0F
        if m <= 0x9F:
            return "array", m & 0x0F
        if m <= 0xBF:
            return "str", m & 0x1F
        if m == 0xC0:
            return "nil", 0
        if m == 0xC1:
            raise Invalid("reserved marker")
        if m in (0xC2, 0xC3):
            return "bool", m - 0xC2
        if m <= 0xC6:
            return "bin", self.be(1 << (m - 0xC4))
        if m <= 0xC9:
            return "ext", self.be(1 << (m - 0xC7)) + 1
        if m == 0xCA:
            return "float", self.be(4)
        if m == 0xCB:
            return "float", self.be(8)
        if m <= 0xCF:
            return "int", self.be(1 << (m - 0xCC))
        if m <= 0xD3:
            k = 1 << (m - 0xD0)
            v = self.be(k)
            return "int", v - (1 << (8 * k)) if v >> (8 * k - 1) else v
        if m <= 0xD8:
            return "ext", (1 << (m - 0xD4)) + 1
        if m <= 0xDB:
            return "str", self.be(1 << (m - 0xD9))
        if m <= 0xDD:
            return "array", self.be(2 if m == 0xDC else 4)
        return "map", self.be(2 if m == 0xDE else 4)

    def rest_of(self, kind: str, n: int) -> None:
        """Skips what follows a head: a payload, or whole elements."""
        todo = 0
        while True:
            if kind in ("str", "bin", "ext"):
                self.take(n)
            elif kind == "array":
                todo += n
            elif kind == "map":
                todo += 2 * n
            if todo == 0:
                return
            todo -= 1
            kind, n = self.head()

    def skip(self, count: int) -> None:
        for _ in range(count):
            self.rest_of(*self.head())

    def text(self, kind: str, n: int) -> str:
        if kind != "str":
            raise Invalid(f"expected a str, found {kind}")
        return self.take(n).decode("utf-8")

    def frame(self) -> None:
        kind, n = self.head()
        if kind != "array" or n < 3:
            raise Invalid("frame")
        kind, hn = self.head()
        if kind != "array" or hn < 8:
            raise Invalid("header")
        for lo, hi in HEADER_RANGES:
            kind, v = self.head()
            if kind != "int" or not lo <= v <= hi:
                raise Invalid("header field")
        self.skip(hn - 8)
        kind, count = self.head()
        if kind != "map":
            raise Invalid("params")
        for _ in range(count):
            self.text(*self.head())
            kind, vn = self.head()
            if kind != "array" or vn < 2:
                raise Invalid("value pair")
            kind, tag = self.head()
            if kind != "int":
                raise Invalid("tag")
            kind, v = self.head()
            if tag == 10 and not (kind == "int" and I64[0] <= v <= I64[1]):
                raise Invalid("int64")
            if tag == 20 and kind not in ("int", "float"):
                raise Invalid("double")
            if tag == 30:
                self.text(kind, v)
            elif tag == 40 and kind != "bool":
                raise Invalid("bool")
            elif tag not in (10, 20, 40):
                self.rest_of(kind, v)
            self.skip(vn - 2)
        kind, an = self.head()
        if kind != "array":
            raise Invalid("attachments")
        for _ in range(an):
            kind, pn = self.head()
            if kind != "array" or pn < 2:
                raise Invalid("attachment pair")
            self.text(*self.head())
            kind, n_bytes = self.head()
            if kind != "bin":
                raise Invalid("attachment data")
            self.take(n_bytes)
            self.skip(pn - 2)
        self.skip(n - 3)
        if self.pos != len(self.data):
            raise Invalid("trailing bytes")


def reference_valid(data: bytes) -> bool:
    try:
        Reader(data).frame()
    except (Invalid, UnicodeDecodeError):
        return False
    return True


def files(directory: Path) -> list[tuple[str, bytes]]:
    out = sorted((f"{p.parent.name}/{p.name}", p.read_bytes()) for p in directory.iterdir() if p.is_file())
    if not out:
        raise FileNotFoundError(f"{directory} is empty: the committed corpus is missing")
    return out


def corpus() -> list[tuple[str, bytes]]:
    seen: set[bytes] = set()
    out = []
    targets = sorted(p for p in (FUZZ / "corpus").iterdir() if p.is_dir())
    assert len(targets) >= 8, targets
    for target in targets:
        for name, data in files(target):
            if data not in seen:
                seen.add(data)
                out.append((name, data))
    return out


def check(name: str, data: bytes) -> bool:
    """Decodes `data` every way the package can; returns whether it is a
    frame. Anything but a frame or a DecodeError fails the test."""
    try:
        f = mf.Frame.decode(data)
    except mf.DecodeError as e:
        assert e.kind in KINDS, (name, e.kind)
        assert 0 <= e.offset <= len(data), (name, e.offset)
        ok = False
    else:
        ok = True
        again = f.encode()
        g = mf.Frame.decode(again)
        assert g.encode() == again, name
        if not any(isinstance(v, float) and math.isnan(v) for _, _, v in f.params()):
            assert g == f, name
        f.to_dict()
        f.attachments()
    # The stream reader agrees with the whole-buffer decoder.
    try:
        frames = list(mf.iter_frames(data))
    except mf.DecodeError:
        frames = None
    if ok:
        assert frames is not None and len(frames) == 1, name
    try:
        mf.peek_header(data)
    except mf.DecodeError:
        assert not ok, name
    return ok


def test_every_corpus_input_decodes_or_raises_decode_error_as_the_reference_says() -> None:
    inputs = corpus()
    assert len(inputs) > 1000
    disagree = []
    valid = 0
    for name, data in inputs:
        ours = check(name, data)
        valid += ours
        if ours != reference_valid(data):
            disagree.append((name, ours))
    assert not disagree, disagree[:20]
    # Both kinds are well represented: the corpus is not all junk.
    assert 100 < valid < len(inputs) - 100, valid


@pytest.mark.parametrize("name,data", files(FUZZ / "regressions"), ids=lambda x: x if isinstance(x, str) else "")
def test_regression_inputs_raise_decode_error_or_decode_as_the_reference_says(name: str, data: bytes) -> None:
    ours = check(name, data)
    assert ours == reference_valid(data), name


def test_the_crafted_hostile_inputs_raise_decode_error() -> None:
    crafted = [(n, d) for n, d in files(FUZZ / "regressions") if "claims" in n or "reserved" in n]
    assert len(crafted) >= 7
    for name, data in crafted:
        with pytest.raises(mf.DecodeError):
            mf.Frame.decode(data)


def test_every_truncation_of_a_frame_raises_truncated() -> None:
    for name, data, _ in interop_cases():
        if len(data) > 5000:
            data = data[:5000]  # the cuts of the long ones are alike past here
            cuts = range(len(data))
        else:
            cuts = range(len(data))
        for cut in cuts:
            with pytest.raises(mf.DecodeError) as e:
                mf.Frame.decode(data[:cut])
            assert e.value.kind == "truncated" and e.value.offset <= cut, (name, cut)


def test_corrupted_frames_never_escape_decode_error() -> None:
    rng = random.Random(21)
    cases = [(n, d) for n, d, _ in interop_cases() if len(d) < 20_000]
    for _ in range(3000):
        name, data = rng.choice(cases)
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        check(name, bytes(b))


def test_msgpack_values_that_are_not_frames_are_refused() -> None:
    for value in [None, 1, "frame", [], [1, 2], [[1] * 8, {}, []][:2], [[1] * 7, {}, []],
                  [[-1] + [0] * 7, {}, []], [[0] * 8, {"k": [10, "x"]}, []], [[0] * 8, {"k": [40, 1]}, []],
                  [[0] * 8, {"k": [30, b"bin"]}, []], [[0] * 8, {b"bin": [10, 1]}, []],
                  [[0] * 8, {}, [["a", "str not bin"]]], [[0] * 8, {"k": [10, 2**63]}, []],
                  [[0] * 8, {"k": [1.5, 1]}, []], [[0] * 8, {"k": [10]}, []], [[0] * 8, [], []]]:
        data = msgpack.packb(value, use_bin_type=True)
        assert not reference_valid(data), value
        with pytest.raises(mf.DecodeError):
            mf.Frame.decode(data)
