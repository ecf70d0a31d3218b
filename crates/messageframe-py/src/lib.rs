//! `messageframe` for Python: the pyo3 extension module
//! `messageframe._messageframe`, re-exported by the package
//! `python/messageframe/__init__.py`.
//!
//! A thin layer over the Rust library's public API: `Frame` wraps
//! `messageframe::Frame`, decoding shares the caller's buffer
//! (`Decoder::decode_shared_into` over a `Bytes` that borrows it), and
//! attachments come back as memoryview slices of that buffer. The API is
//! documented in docs/python.md and in the type stubs next to the package.

#![deny(unsafe_code)]

mod errors;
mod frame;
mod header;
#[allow(unsafe_code)]
mod memory;
mod source;
mod stream;
mod value;

use messageframe::Header;
use pyo3::prelude::*;

/// peek_header(buffer) -> Header
///
/// The header of the frame at the start of `buffer` (bytes, bytearray,
/// memoryview, numpy uint8 array), read without the parameters: only the
/// frame's first bytes are looked at. Raises DecodeError if they are not
/// a frame's.
#[pyfunction]
fn peek_header(py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<header::PyHeader> {
    let input = source::acquire(buffer)?;
    Header::peek(&input.bytes)
        .map(|h| header::PyHeader(header::HeaderFields::of(&h)))
        .map_err(|e| errors::from_decode(py, &e))
}

#[pymodule]
fn _messageframe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<frame::PyFrame>()?;
    m.add_class::<header::PyHeader>()?;
    m.add_class::<value::PyUnknown>()?;
    m.add_class::<stream::FrameIterator>()?;
    m.add("DecodeError", py.get_type::<errors::DecodeError>())?;
    m.add_function(wrap_pyfunction!(peek_header, m)?)?;
    m.add_function(wrap_pyfunction!(stream::iter_frames, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
