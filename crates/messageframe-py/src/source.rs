//! Python buffers as the library's input: `bytes`, `bytearray`,
//! `memoryview`, numpy arrays, anything with the buffer protocol.

use std::sync::OnceLock;

use messageframe::Bytes;
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView, PySlice};

use crate::memory::{share_bytes, share_export};

/// The Python object a decoded frame's bytes live in, from which its
/// attachments are handed out as memoryview slices.
pub(crate) struct Source {
    /// A `bytes` object, or a read-only, one-dimensional memoryview of
    /// unsigned bytes (format 'B') over the caller's buffer.
    obj: Py<PyAny>,
    /// The address of its first byte, as the frame's `Bytes` see it.
    base: usize,
    /// A memoryview of all of `obj`, made on first use for `bytes`.
    ///
    /// A std `OnceLock` filled with `get`/`set` rather than pyo3's
    /// `PyOnceLock::get_or_try_init`: that one detaches from the
    /// interpreter while it initializes (so that a thread waiting for the
    /// cell cannot deadlock on the GIL): 400 of the 9,480 instructions of
    /// a 4-parameter decode + lookup + first `attachment()` (callgrind),
    /// and 11 % of its time (0.572 -> 0.509 us). Making the view runs no
    /// Python code, so two threads racing here each make one and the
    /// loser's is dropped.
    view: OnceLock<Py<PyAny>>,
}

impl Source {
    /// Another reference to the same source.
    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Source {
        Source {
            obj: self.obj.clone_ref(py),
            base: self.base,
            view: match self.view.get() {
                Some(v) => OnceLock::from(v.clone_ref(py)),
                None => OnceLock::new(),
            },
        }
    }

    /// A read-only memoryview of `len` bytes at `ptr`, which must be inside
    /// the source (a slice of a `Bytes` made by [`acquire`]).
    pub(crate) fn slice<'py>(
        &self,
        py: Python<'py>,
        ptr: *const u8,
        len: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let view = match self.view.get() {
            Some(view) => view,
            None => {
                let obj = self.obj.bind(py);
                let view = if obj.is_instance_of::<PyMemoryView>() {
                    obj.clone().unbind()
                } else {
                    PyMemoryView::from(obj)?.into_any().unbind()
                };
                // Another thread's view, if it was first, is as good.
                let _ = self.view.set(view);
                self.view.get().expect("set just now, or by another thread")
            }
        };
        let start = (ptr as usize).wrapping_sub(self.base);
        let slice = PySlice::new(py, to_isize(start)?, to_isize(start + len)?, 1);
        view.bind(py).get_item(slice)
    }
}

fn to_isize(n: usize) -> PyResult<isize> {
    isize::try_from(n).map_err(|_| PyBufferError::new_err("offset beyond isize"))
}

/// A buffer's bytes, shared with the Python object that holds them.
pub(crate) struct Input {
    pub(crate) bytes: Bytes,
    pub(crate) source: Source,
    /// Whether no one can write the bytes while we read them: a `bytes`
    /// object, or a view of one. Only such inputs are decoded with the
    /// interpreter released (another Python thread could write into a
    /// `bytearray` or a numpy array meanwhile).
    pub(crate) immutable: bool,
}

/// `obj`'s bytes without copying: a `bytes` object as it is; any other
/// object with the buffer protocol through a read-only byte memoryview of
/// it, which must be C-contiguous.
pub(crate) fn acquire(obj: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        let bytes = share_bytes(b);
        let base = bytes.as_ptr() as usize;
        return Ok(Input {
            bytes,
            source: Source {
                obj: b.clone().into_any().unbind(),
                base,
                view: OnceLock::new(),
            },
            immutable: true,
        });
    }
    let view = byte_view(obj)?;
    let immutable = view.getattr("obj")?.is_exact_instance_of::<PyBytes>();
    let bytes = share_export(PyUntypedBuffer::get(&view)?)?;
    let base = bytes.as_ptr() as usize;
    let view = view.unbind();
    let cell = OnceLock::from(view.clone_ref(obj.py()));
    Ok(Input {
        bytes,
        source: Source {
            obj: view,
            base,
            view: cell,
        },
        immutable,
    })
}

/// A read-only, one-dimensional memoryview of unsigned bytes over `obj`'s
/// buffer: `memoryview(obj)`, checked C-contiguous, cast to 'B' if it has
/// another format or shape, made read-only if it is not. TypeError if `obj`
/// has no buffer protocol, BufferError if it is not C-contiguous.
pub(crate) fn byte_view<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let mut view = PyMemoryView::from(obj)?.into_any();
    if !view.getattr("c_contiguous")?.is_truthy()? {
        return Err(PyBufferError::new_err(format!(
            "a {} buffer that is not C-contiguous cannot be shared without a copy \
             (numpy: np.ascontiguousarray(a))",
            obj.get_type().qualname()?
        )));
    }
    let ndim: usize = view.getattr("ndim")?.extract()?;
    if ndim != 1 || view.getattr("format")?.extract::<String>()? != "B" {
        view = view.call_method1("cast", ("B",))?;
    }
    if !view.getattr("readonly")?.is_truthy()? {
        view = view.call_method0("toreadonly")?;
    }
    Ok(view)
}
