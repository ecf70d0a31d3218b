//! Python memory seen from Rust without copying: the crate's only `unsafe`.
//!
//! Four things need a raw pointer into memory that Python owns:
//!
//! - a `bytes` object held as [`Bytes`] (decoded frames borrow their input;
//!   built frames borrow the attachments they were given);
//! - any other buffer (`bytearray`, `memoryview`, numpy arrays) held as
//!   [`Bytes`] through a buffer export ([`PyUntypedBuffer`]);
//! - the frame reader's private `bytearray`, read between two calls into
//!   Python;
//! - a new `bytes` object written by the encoder before anyone sees it
//!   ([`new_bytes_with`]).
//!
//! Each is a few lines with the argument for its soundness next to it. The
//! crate cannot run under Miri (every path goes through CPython's C API),
//! so these arguments and the pytest suite, which exercises each path
//! (tests/test_zero_copy.py, tests/test_threads.py, tests/test_stream.py),
//! are what stand behind them.

use std::mem::MaybeUninit;

use messageframe::Bytes;
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyOverflowError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

/// What keeps Python memory alive and unmoved while a [`Bytes`] points at
/// it.
enum Keeper {
    /// A reference to an immutable `bytes` object.
    Bytes(#[allow(dead_code)] Py<PyBytes>),
    /// A buffer export: until it is released, the exporter keeps the memory
    /// where it is (a `bytearray` refuses to resize, a numpy array to be
    /// resized or freed).
    Export(#[allow(dead_code)] PyUntypedBuffer),
}

/// The owner behind a [`Bytes`] made by this module.
struct Owner {
    keeper: Keeper,
    ptr: *const u8,
    len: usize,
}

// SAFETY: `Owner` only reads `ptr..ptr + len`, memory that `keeper` keeps
// allocated and in place for as long as the owner lives, whichever thread
// holds it: `Py<PyBytes>` and `PyUntypedBuffer` are themselves `Send` and
// `Sync` (pyo3 releases them with the interpreter attached, from any
// thread). The raw pointer is what makes the compiler unable to see that.
unsafe impl Send for Owner {}
// SAFETY: as for `Send`: shared access only ever reads.
unsafe impl Sync for Owner {}

impl AsRef<[u8]> for Owner {
    fn as_ref(&self) -> &[u8] {
        let _ = &self.keeper;
        // SAFETY: `ptr..ptr + len` is the memory of a live `bytes` object or
        // of a live, C-contiguous buffer export (checked when the owner was
        // made), kept in place by `keeper`. A `bytes` object never changes.
        // An export's memory can still be written by whoever else holds the
        // object (a `bytearray`, a numpy array): the callers that read it
        // with the interpreter released (decode and encode of large frames)
        // do so only for immutable `bytes` inputs, or say so in their docs
        // (encode reads attachment buffers, as `socket.sendall` does). A
        // null pointer is only possible for an empty buffer, which
        // `from_raw_parts` must not see: it gets the dangling pointer of an
        // empty slice instead.
        if self.len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A `bytes` object's content as [`Bytes`], without copying: the result
/// holds a reference to the object.
pub(crate) fn share_bytes(obj: &Bound<'_, PyBytes>) -> Bytes {
    let data = obj.as_bytes();
    Bytes::from_owner(Owner {
        ptr: data.as_ptr(),
        len: data.len(),
        keeper: Keeper::Bytes(obj.clone().unbind()),
    })
}

/// A C-contiguous buffer export's memory as [`Bytes`], without copying:
/// the result holds the export until it is dropped.
pub(crate) fn share_export(export: PyUntypedBuffer) -> PyResult<Bytes> {
    if !export.is_c_contiguous() {
        return Err(PyBufferError::new_err("the buffer is not C-contiguous"));
    }
    let (ptr, len) = (
        export.buf_ptr().cast::<u8>().cast_const(),
        export.len_bytes(),
    );
    Ok(Bytes::from_owner(Owner {
        ptr,
        len,
        keeper: Keeper::Export(export),
    }))
}

/// Runs `read` over the current content of a `bytearray` that only the
/// caller can reach.
///
/// The caller must keep `array` private (never hand it to Python code, nor
/// a memoryview of it that outlives one call: see `stream.rs`, which
/// releases every view it lends) and `read` must not call into Python.
pub(crate) fn read_private_bytearray<R>(
    array: &Bound<'_, PyByteArray>,
    read: impl FnOnce(&[u8]) -> R,
) -> R {
    // SAFETY: pyo3's `as_bytes` is unsafe because Python code could resize
    // or write the array while the slice lives. Nothing can here: the slice
    // lives only during `read`, which runs no Python code, so with the
    // interpreter attached no other thread runs Python either; and no
    // Python object other than the caller's reference reaches the array (the
    // caller's contract above), so no C code of another thread can hold it.
    read(unsafe { array.as_bytes() })
}

/// A new `bytes` object of `len` bytes, all of them written by `write`,
/// which gets them uninitialized and returns how many it wrote: `len`, or
/// the object is dropped and the result is an error.
///
/// pyo3's `PyBytes::new_with` zero-fills the object before its closure
/// writes it: for a frame carrying 1 MiB of attachments that was a second
/// pass over the output (its `encode()` took 31.4 us, 16.1 without it,
/// timeit, min of 7; the benchmark's build + encode of "4 params + 1 MiB"
/// 48 us against msgspec's and ormsgpack's 38).
pub(crate) fn new_bytes_with<'py>(
    py: Python<'py>,
    len: usize,
    write: impl FnOnce(&mut [MaybeUninit<u8>]) -> PyResult<usize>,
) -> PyResult<Bound<'py, PyBytes>> {
    let size = pyo3::ffi::Py_ssize_t::try_from(len).map_err(|_| {
        PyOverflowError::new_err("the encoded frame is larger than a bytes object can be")
    })?;
    // SAFETY: `PyBytes_FromStringAndSize(NULL, size)` returns a new
    // reference to a new `bytes` object with room for `size` bytes (plus
    // the trailing NUL it sets itself), uninitialized, or NULL with an
    // exception set; `from_owned_ptr_or_err` takes that reference over.
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyBytes_FromStringAndSize(std::ptr::null(), size),
        )?
        .cast_into_unchecked::<PyBytes>()
    };
    // SAFETY: the object was made just now and no other reference to it
    // exists, so nothing else reads or writes its `len` bytes while the
    // slice lives; `PyBytes_AsString` of a `bytes` object cannot fail and
    // points at those bytes (u8: no alignment to keep). They are given out
    // as `MaybeUninit`, never read as `u8` before being written.
    let buf = unsafe {
        let data = pyo3::ffi::PyBytes_AsString(obj.as_ptr()).cast::<MaybeUninit<u8>>();
        std::slice::from_raw_parts_mut(data, len)
    };
    let written = write(buf)?;
    if written != len {
        // Never hand out a `bytes` object with bytes nobody wrote.
        return Err(PyRuntimeError::new_err(format!(
            "the encoder wrote {written} bytes of the {len} it announced"
        )));
    }
    Ok(obj)
}
