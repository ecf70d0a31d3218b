//! `messageframe.iter_frames`: frames one after the other from a buffer, a
//! binary file or a socket.

use messageframe::{Decoder, FrameScanner, Scan};
use pyo3::exceptions::{PyBlockingIOError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PySlice};

use crate::errors;
use crate::frame::PyFrame;
use crate::memory::read_private_bytearray;
use crate::source::{acquire, Input};

/// Bytes asked of the source per read, at least.
const READ_SIZE: usize = 64 * 1024;

/// How a stream is read.
enum ReadWith {
    /// `sock.recv_into(view)` (sockets).
    RecvInto(Py<PyAny>),
    /// `file.readinto(view)` (binary files, io objects).
    ReadInto(Py<PyAny>),
    /// `obj.read(n)` (anything else with a `read`).
    Read(Py<PyAny>),
}

enum State {
    /// Frames of a buffer in memory: decoded in place, attachments are
    /// views of the caller's buffer.
    Memory { input: Input, pos: usize },
    /// Frames of a stream, scanned as bytes arrive.
    Stream(Box<Reader>),
    /// Finished (after the end, or after an error).
    Done,
}

struct Reader {
    read: ReadWith,
    /// The read buffer: private to the reader (see `memory.rs`).
    buf: Py<PyByteArray>,
    /// The current frame's first byte in `buf`, and the end of the data.
    start: usize,
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    scanner: FrameScanner,
    eof: bool,
}

/// The iterator `iter_frames` returns.
#[pyclass(module = "messageframe", name = "FrameIterator")]
pub(crate) struct FrameIterator {
    state: State,
    decoder: Decoder,
}

#[pymethods]
impl FrameIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<PyFrame>> {
        let result = match &mut self.state {
            State::Done => return Ok(None),
            State::Memory { input, pos } => next_in_memory(py, input, pos, &self.decoder),
            State::Stream(reader) => reader.next_frame(py, &self.decoder),
        };
        match result {
            Ok(Some(frame)) => Ok(Some(frame)),
            other => {
                self.state = State::Done;
                other
            }
        }
    }
}

fn next_in_memory(
    py: Python<'_>,
    input: &mut Input,
    pos: &mut usize,
    decoder: &Decoder,
) -> PyResult<Option<PyFrame>> {
    if *pos == input.bytes.len() {
        return Ok(None);
    }
    let rest = Input {
        bytes: input.bytes.slice(*pos..),
        source: input.source.clone_ref(py),
        immutable: input.immutable,
    };
    let (frame, used) = PyFrame::decode_input(py, rest, decoder, false, *pos)?;
    *pos += used;
    Ok(Some(frame))
}

impl Reader {
    fn next_frame(&mut self, py: Python<'_>, decoder: &Decoder) -> PyResult<Option<PyFrame>> {
        loop {
            let buf = self.buf.bind(py);
            let (start, end) = (self.start, self.end);
            let scanner = &mut self.scanner;
            let scanned = read_private_bytearray(buf, |b| scanner.scan(&b[start..end]));
            let at = self.base + start as u64;
            match scanned {
                Ok(Scan::Complete { len, .. }) => {
                    // The frame gets its own bytes object: the read buffer
                    // is reused for the frames after it.
                    let bytes = PyBytes::new_with(py, len, |dst| {
                        read_private_bytearray(buf, |b| {
                            dst.copy_from_slice(&b[start..start + len])
                        });
                        Ok(())
                    })?;
                    self.start += len;
                    let input = acquire(bytes.as_any())?;
                    let frame = PyFrame::decode_input(py, input, decoder, true, at as usize)?.0;
                    return Ok(Some(frame));
                }
                Ok(Scan::Incomplete { need }) => {
                    if self.eof {
                        if start == end {
                            return Ok(None);
                        }
                        let err = read_private_bytearray(buf, |b| {
                            self.scanner.truncation(&b[start..end])
                        });
                        return Err(match err {
                            Some(e) => errors::from_decode(py, &e.with_base_offset(at as usize)),
                            None => errors::decode_error(
                                py,
                                format!("input is truncated: the frame at byte {at} is incomplete"),
                                at as usize,
                                "truncated",
                            ),
                        });
                    }
                    self.fill(py, need)?;
                }
                Err(e) => return Err(errors::from_decode(py, &e.with_base_offset(at as usize))),
            }
        }
    }

    /// Reads more bytes: at least room for `need` more, at least
    /// [`READ_SIZE`]. Sets `eof` at the end of the stream.
    fn fill(&mut self, py: Python<'_>, need: usize) -> PyResult<()> {
        let buf = self.buf.bind(py);
        let pending = self.end - self.start;
        let want = need.max(READ_SIZE);
        // Move the partial frame to the front once it is all that is left,
        // so the buffer does not grow with the stream.
        if self.start > 0 {
            let keep = buf.get_item(PySlice::new(py, self.start as isize, self.end as isize, 1))?;
            buf.set_item(PySlice::new(py, 0, pending as isize, 1), keep)?;
            self.base += self.start as u64;
            self.start = 0;
            self.end = pending;
        }
        if buf.len() < self.end + want {
            buf.resize(self.end + want)?;
        }
        let got = match &self.read {
            ReadWith::RecvInto(f) | ReadWith::ReadInto(f) => {
                let view = PyMemoryView::from(buf.as_any())?.get_item(PySlice::new(
                    py,
                    self.end as isize,
                    (self.end + want) as isize,
                    1,
                ))?;
                let n = f.bind(py).call1((&view,));
                // Whatever the callee did with the view, it cannot keep it:
                // a released view refuses every access (`memory.rs`).
                view.call_method0("release")?;
                let n = n?;
                if n.is_none() {
                    return Err(PyBlockingIOError::new_err(
                        "the source is non-blocking and has no data yet",
                    ));
                }
                n.extract::<usize>()?.min(want)
            }
            ReadWith::Read(f) => {
                let chunk = f.bind(py).call1((want,))?;
                let chunk = chunk.cast::<PyBytes>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "read() must return bytes, not {}",
                        chunk
                            .get_type()
                            .qualname()
                            .map_or("?".into(), |q| q.to_string())
                    ))
                })?;
                let data = chunk.as_bytes();
                let n = data.len().min(want);
                buf.set_item(
                    PySlice::new(py, self.end as isize, (self.end + n) as isize, 1),
                    PyBytes::new(py, &data[..n]),
                )?;
                n
            }
        };
        if got == 0 {
            self.eof = true;
        }
        self.end += got;
        Ok(())
    }
}

/// `source`'s bytes if it has the buffer protocol (None if it has not;
/// an error if it has, but cannot share them).
fn buffer_of(source: &Bound<'_, PyAny>) -> PyResult<Option<Input>> {
    match acquire(source) {
        Ok(input) => Ok(Some(input)),
        Err(e) if e.is_instance_of::<PyTypeError>(source.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// iter_frames(source, *, strict=False)
///
/// The frames of `source`, one after the other: a buffer (bytes,
/// bytearray, memoryview, numpy uint8 array) holding concatenated frames,
/// or a binary file or socket, read incrementally (`recv_into`,
/// `readinto`, or `read`) and scanned with the library's `FrameScanner`,
/// so each frame is yielded as soon as its last byte arrives. A truncated
/// tail raises DecodeError once the frames before it have been yielded, as
/// does a malformed frame; offsets count from the start of the source.
///
/// Frames of a buffer keep attachments as views into that buffer. Frames
/// of a stream are each copied once out of the read buffer into their own
/// `bytes`, which their attachments are views of.
#[pyfunction]
#[pyo3(signature = (source, *, strict=false))]
pub(crate) fn iter_frames(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    strict: bool,
) -> PyResult<FrameIterator> {
    let decoder = Decoder::new().strict(strict);
    let memory = |input| FrameIterator {
        state: State::Memory { input, pos: 0 },
        decoder,
    };
    if source.is_instance_of::<PyBytes>()
        || source.is_instance_of::<PyByteArray>()
        || source.is_instance_of::<PyMemoryView>()
    {
        return Ok(memory(acquire(source)?));
    }
    let read = if source.hasattr("recv_into")? {
        ReadWith::RecvInto(source.getattr("recv_into")?.unbind())
    } else if source.hasattr("readinto")? {
        ReadWith::ReadInto(source.getattr("readinto")?.unbind())
    } else if let Some(input) = buffer_of(source)? {
        // Buffers without a stream interface: numpy arrays, mmap.
        return Ok(memory(input));
    } else if source.hasattr("read")? {
        ReadWith::Read(source.getattr("read")?.unbind())
    } else {
        return Err(PyTypeError::new_err(format!(
            "iter_frames reads a buffer (bytes, bytearray, memoryview, numpy array), a binary \
             file or a socket, not {}",
            source.get_type().qualname()?
        )));
    };
    Ok(FrameIterator {
        state: State::Stream(Box::new(Reader {
            read,
            buf: PyByteArray::new(py, &[]).unbind(),
            start: 0,
            end: 0,
            base: 0,
            scanner: FrameScanner::with_limits(*decoder.current_limits()),
            eof: false,
        })),
        decoder,
    })
}
