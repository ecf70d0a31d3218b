"""Type stubs of the extension module (messageframe._messageframe)."""

from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeAlias, TypeVar, final, overload

from typing_extensions import Buffer, Self

__version__: Final[str]
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

_T = TypeVar("_T")

class DecodeError(ValueError):
    """A frame that cannot be decoded: truncated, malformed or hostile input."""

    #: The byte where the problem is (from the start of the buffer, or of the
    #: stream for iter_frames).
    offset: int
    #: What is wrong: 'truncated', 'unexpected_type', 'too_few_elements',
    #: 'integer_out_of_range', 'invalid_utf8', 'duplicate_key',
    #: 'trailing_bytes', 'limit_exceeded', 'capacity_exceeded'.
    kind: str

@final
class Header:
    """A frame's header: eight integers. Immutable and hashable."""

    def __new__(
        cls,
        message_id: int = 0,
        message_type: int = 0,
        source: int = 0,
        target: int = 0,
        timestamp: int | None = None,
        counter: int = 0,
        version: int = 1,
        flags: int = 0,
    ) -> Self: ...
    @property
    def timestamp(self) -> int:
        """Milliseconds since the UNIX epoch (u64)."""
    @property
    def counter(self) -> int:
        """Message counter (u64)."""
    @property
    def source(self) -> int:
        """Source node id (u32)."""
    @property
    def target(self) -> int:
        """Target node id (u32)."""
    @property
    def message_id(self) -> int:
        """Application message id (i32)."""
    @property
    def message_type(self) -> int:
        """Application message type (i32)."""
    @property
    def version(self) -> int:
        """Protocol version (u16)."""
    @property
    def flags(self) -> int:
        """Application flags (u16)."""
    def replace(
        self,
        *,
        message_id: int = ...,
        message_type: int = ...,
        source: int = ...,
        target: int = ...,
        timestamp: int = ...,
        counter: int = ...,
        version: int = ...,
        flags: int = ...,
    ) -> Header:
        """A copy with the given fields changed."""
    def to_dict(self) -> dict[str, int]:
        """The fields as a dict, in wire order."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Unknown:
    """A value of a tag this library does not know, kept as raw MessagePack
    bytes and written back unchanged."""

    def __new__(cls, tag: int, raw: bytes) -> Self: ...
    @property
    def tag(self) -> int:
        """The wire tag: any MessagePack integer but 10, 20, 30, 40."""
    @property
    def raw(self) -> bytes:
        """The value's MessagePack bytes."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

#: A parameter value: bool, int (int64), float (double), str, or an Unknown.
_Value: TypeAlias = bool | int | float | str | Unknown

@final
class Frame:
    """One message: a header, parameters addressed by (device, param) with
    typed values, and named binary attachments."""

    def __new__(
        cls,
        message_id: int = 0,
        message_type: int = 0,
        source: int = 0,
        target: int = 0,
        timestamp: int | None = None,
        counter: int = 0,
        version: int = 1,
        flags: int = 0,
    ) -> Self: ...
    @property
    def header(self) -> Header:
        """The header (immutable: assign a new one to change it)."""
    @header.setter
    def header(self, header: Header) -> None: ...
    def update_timestamp(self) -> None:
        """Sets the header's timestamp to now."""
    def add(self, device: str, param: str, value: _Value) -> None:
        """Appends a parameter (no duplicate check)."""
    def set(self, device: str, param: str, value: _Value) -> None:
        """Replaces the value of an existing key, or appends it."""
    def update(self, device: str, param: str, value: _Value) -> bool:
        """Changes an existing key's value; False if the key is absent."""
    def find(self, device: str, param: str) -> _Value | None:
        """The value of (device, param), or None; the first of duplicates."""
    def __getitem__(self, key: tuple[str, str], /) -> _Value: ...
    def __contains__(self, key: tuple[str, str], /) -> bool: ...
    def __len__(self) -> int: ...
    def params(self) -> list[tuple[str, str, _Value]]:
        """[(device, param, value), ...] in wire order."""
    def to_dict(self) -> dict[str, dict[str, _Value]]:
        """{device: {param: value}}; the first of duplicate keys wins."""
    @staticmethod
    def from_dict(
        mapping: Mapping[str, Mapping[str, _Value]],
        *,
        message_id: int = 0,
        message_type: int = 0,
        source: int = 0,
        target: int = 0,
        timestamp: int | None = None,
        counter: int = 0,
        version: int = 1,
        flags: int = 0,
    ) -> Frame:
        """A frame from {device: {param: value}}, header fields as keywords."""
    def add_attachment(self, name: str, buffer: Buffer) -> None:
        """Appends an attachment (any C-contiguous buffer; not copied)."""
    @overload
    def attachment(self, name: str) -> memoryview:
        """The first attachment called `name`: a read-only memoryview, no copy."""
    @overload
    def attachment(self, name: str, default: _T, /) -> memoryview | _T: ...
    def attachments(self) -> list[tuple[str, memoryview]]:
        """[(name, memoryview), ...] in order."""
    def encode(self) -> bytes:
        """The frame's bytes, exactly as the Rust library writes them."""
    @staticmethod
    def decode(buffer: Buffer, *, strict: bool = False) -> Frame:
        """Exactly one frame from a buffer; attachments stay in it."""
    def clear(self) -> None:
        """Removes every parameter and attachment; the header stays."""
    def __eq__(self, other: object, /) -> bool: ...

@final
class FrameIterator(Iterator[Frame]):
    """The iterator iter_frames returns."""

    def __iter__(self) -> FrameIterator: ...
    def __next__(self) -> Frame: ...

def peek_header(buffer: Buffer) -> Header:
    """The header of the frame at the start of `buffer`, without the rest."""

def iter_frames(source: Buffer | Any, *, strict: bool = False) -> FrameIterator:
    """The frames of a buffer, a binary file or a socket, one after the other."""
