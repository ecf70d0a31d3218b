//! `messageframe.Frame`: the library's `Frame`, with attachments that stay
//! in the Python buffers they came from.

use std::collections::HashMap;
use std::sync::Mutex;

use messageframe::{Bytes, Decoder, Frame, SEPARATOR};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyMemoryView, PyString, PyTuple};

use crate::errors;
use crate::header::{HeaderFields, PyHeader};
use crate::memory::{new_bytes_with, share_bytes, share_export};
use crate::source::{acquire, byte_view, Input, Source};
use crate::value::{from_py, to_py};

/// Inputs and outputs from this size on are decoded and encoded with the
/// interpreter released, so that other Python threads run meanwhile. Below
/// it, releasing and re-taking the interpreter would cost more than it lets
/// others do.
pub(crate) const RELEASE_GIL_BYTES: usize = 64 * 1024;

/// A frame's keys and strings are limited to 4 GiB (32-bit offsets); `add`
/// refuses what could pass it, with a margin.
const TEXT_LIMIT: usize = u32::MAX as usize - 1024;

/// One message: a header, parameters addressed by (device, param) with
/// typed values, and named binary attachments.
///
/// Frame(message_id=0, message_type=0, source=0, target=0, timestamp=None,
///       counter=0, version=1, flags=0)
///
/// `timestamp` defaults to now, in milliseconds since the UNIX epoch.
/// `Frame.decode(buffer)` reads one from bytes; `frame.encode()` writes it.
/// A decoded frame keeps a reference to its input: attachments are
/// read-only memoryviews into it, never copies.
///
/// A frame can be read by several threads at once. Changing it while
/// another thread encodes it raises RuntimeError (it is never torn).
#[pyclass(module = "messageframe", name = "Frame")]
pub(crate) struct PyFrame {
    /// Boxed: a `Frame` is a few hundred bytes, which every move of a
    /// `PyFrame` (into its Python object, in and out of the pool) would
    /// copy.
    /// None only while the frame is being dropped (its storage goes back
    /// to the pool).
    frame: Option<Box<Frame>>,
    /// Where decoded attachments live (None for a frame built in Python).
    source: Option<Source>,
    /// Per attachment, in order: the object `add_attachment` was given (a
    /// `bytes` or a read-only byte memoryview), or None for a slice of
    /// `source`. Attachments past its end are slices of `source` too: a
    /// decoded frame leaves it empty (no allocation per decode) until
    /// `add_attachment`.
    views: Vec<Option<Py<PyAny>>>,
    /// An upper bound of the bytes of keys and strings in `frame`.
    text: usize,
}

impl PyFrame {
    fn empty(header: HeaderFields) -> Self {
        let mut frame = pooled_frame();
        frame.set_header(header.to_header());
        PyFrame {
            frame: Some(frame),
            source: None,
            views: Vec::new(),
            text: 0,
        }
    }

    /// Decodes one frame from an acquired input: exactly one frame when
    /// `exact`, else the first and how many bytes it took.
    pub(crate) fn decode_input(
        py: Python<'_>,
        input: Input,
        decoder: &Decoder,
        exact: bool,
        base_offset: usize,
    ) -> PyResult<(Self, usize)> {
        let mut frame = pooled_frame();
        let bytes = &input.bytes;
        let run = |frame: &mut Frame| {
            if exact {
                decoder
                    .decode_shared_into(frame, bytes)
                    .map(|()| bytes.len())
            } else {
                decoder.decode_shared_prefix_into(frame, bytes)
            }
        };
        let result = if input.immutable && bytes.len() >= RELEASE_GIL_BYTES {
            py.detach(|| run(&mut frame))
        } else {
            run(&mut frame)
        };
        let used = result.map_err(|e| errors::from_decode(py, &e.with_base_offset(base_offset)))?;
        let attached: usize = frame.attachments().map(|(_, data)| data.len()).sum();
        Ok((
            PyFrame {
                frame: Some(frame),
                source: Some(input.source),
                views: Vec::new(),
                text: used.saturating_sub(attached),
            },
            used,
        ))
    }

    fn f(&self) -> &Frame {
        self.frame
            .as_deref()
            .expect("a frame in use has its storage")
    }

    fn fm(&mut self) -> &mut Frame {
        self.frame
            .as_deref_mut()
            .expect("a frame in use has its storage")
    }

    fn check_device(device: &str) -> PyResult<()> {
        if device.as_bytes().contains(&(SEPARATOR as u8)) {
            return Err(PyValueError::new_err(format!(
                "device {device:?} contains U+001F, the key separator"
            )));
        }
        Ok(())
    }

    /// Adds, sets or updates a parameter, checking the device and the
    /// frame's capacity first.
    fn put(
        &mut self,
        device: &str,
        param: &str,
        value: &Bound<'_, PyAny>,
        op: Op,
    ) -> PyResult<bool> {
        Self::check_device(device)?;
        let v = from_py(value, device, param)?;
        let size = device.len()
            + param.len()
            + 1
            + match v {
                messageframe::ValueRef::String(s) => s.len(),
                messageframe::ValueRef::Unknown(u) => u.raw().len(),
                _ => 0,
            };
        if self.text.saturating_add(size) > TEXT_LIMIT {
            return Err(PyValueError::new_err(
                "the frame is full: its keys and strings are limited to 4 GiB",
            ));
        }
        self.text += size;
        Ok(match op {
            Op::Add => {
                self.fm().add(device, param, v);
                true
            }
            Op::Set => {
                self.fm().set(device, param, v);
                true
            }
            Op::Update => self.fm().update(device, param, v),
        })
    }

    /// The memoryview of attachment `i`, whose data is `data`.
    fn view<'py>(&self, py: Python<'py>, i: usize, data: &Bytes) -> PyResult<Bound<'py, PyAny>> {
        match self.views.get(i).and_then(Option::as_ref) {
            Some(obj) => {
                let obj = obj.bind(py);
                if obj.is_instance_of::<PyBytes>() {
                    Ok(PyMemoryView::from(obj)?.into_any())
                } else {
                    Ok(obj.clone())
                }
            }
            None => match &self.source {
                Some(source) => source.slice(py, data.as_ptr(), data.len()),
                None => unreachable!("a decoded attachment always has its source"),
            },
        }
    }

    fn fill_from_mapping(&mut self, mapping: &Bound<'_, PyAny>) -> PyResult<()> {
        for_each_item(mapping, |device, params| {
            let device = device.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "from_dict: device names are str, not {}",
                    type_name(device)
                ))
            })?;
            let device = device.to_str()?;
            Self::check_device(device)?;
            for_each_item(params, |param, value| {
                let param = param.cast::<PyString>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "from_dict: parameter names are str, not {}",
                        type_name(param)
                    ))
                })?;
                self.put(device, param.to_str()?, value, Op::Add).map(drop)
            })
        })
    }
}

impl Drop for PyFrame {
    fn drop(&mut self) {
        if let Some(frame) = self.frame.take() {
            recycle(frame, self.text);
        }
    }
}

/// Cleared frames kept for the next decodes: a frame's storage (entry
/// table, text arena, attachment slots) is allocated once and reused, as a
/// Rust program reuses one `Frame`, instead of being allocated and freed
/// for every message. Bounded in count and in the size of what is kept.
// Boxes on purpose: a frame moves in and out of the pool as one pointer.
#[allow(clippy::vec_box)]
static POOL: Mutex<Vec<Box<Frame>>> = Mutex::new(Vec::new());
const POOL_FRAMES: usize = 16;
/// Frames that held more text than this are freed, not kept.
const POOL_TEXT_BYTES: usize = 256 * 1024;
const POOL_PARAMS: usize = 4096;

fn pooled_frame() -> Box<Frame> {
    POOL.lock()
        .ok()
        .and_then(|mut pool| pool.pop())
        .unwrap_or_default()
}

/// Clears `frame` and keeps it for the next decode if it is small (`text`:
/// an upper bound of its keys and strings).
fn recycle(mut frame: Box<Frame>, text: usize) {
    if text > POOL_TEXT_BYTES || frame.len() > POOL_PARAMS {
        return;
    }
    frame.clear();
    if let Ok(mut pool) = POOL.lock() {
        if pool.len() < POOL_FRAMES {
            pool.push(frame);
        }
    }
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Set,
    Update,
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .qualname()
        .map_or_else(|_| "?".to_owned(), |q| q.to_string())
}

/// Calls `f(key, value)` for each item of a mapping (a dict directly, any
/// other mapping through `.items()`).
fn for_each_item<'py>(
    mapping: &Bound<'py, PyAny>,
    mut f: impl FnMut(&Bound<'py, PyAny>, &Bound<'py, PyAny>) -> PyResult<()>,
) -> PyResult<()> {
    if let Ok(d) = mapping.cast::<PyDict>() {
        for (k, v) in d.iter() {
            f(&k, &v)?;
        }
        return Ok(());
    }
    let items = mapping.call_method0("items").map_err(|_| {
        PyTypeError::new_err(format!(
            "from_dict expects {{device: {{param: value}}}} mappings, not {}",
            type_name(mapping)
        ))
    })?;
    for item in items.try_iter()? {
        let (k, v): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
        f(&k, &v)?;
    }
    Ok(())
}

/// `(device, param)` from a `frame[device, param]` key.
fn key_pair<'py>(
    key: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyString>, Bound<'py, PyString>)> {
    let bad = || {
        PyTypeError::new_err(format!(
            "frame keys are (device, param) tuples of two str, not {}",
            type_name(key)
        ))
    };
    let t = key.cast::<PyTuple>().map_err(|_| bad())?;
    if t.len() != 2 {
        return Err(bad());
    }
    let d = t.get_item(0)?.cast_into::<PyString>().map_err(|_| bad())?;
    let p = t.get_item(1)?.cast_into::<PyString>().map_err(|_| bad())?;
    Ok((d, p))
}

#[pymethods]
impl PyFrame {
    #[new]
    #[pyo3(signature = (message_id=0, message_type=0, source=0, target=0, timestamp=None, counter=0, version=1, flags=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        message_id: i32,
        message_type: i32,
        source: u32,
        target: u32,
        timestamp: Option<u64>,
        counter: u64,
        version: u16,
        flags: u16,
    ) -> Self {
        PyFrame::empty(HeaderFields::new(
            message_id,
            message_type,
            source,
            target,
            timestamp,
            counter,
            version,
            flags,
        ))
    }

    /// The header (a Header; immutable: assign a new one to change it,
    /// e.g. `frame.header = frame.header.replace(counter=7)`).
    #[getter]
    fn header(&self) -> PyHeader {
        PyHeader(HeaderFields::of(self.f().header()))
    }

    #[setter]
    fn set_header(&mut self, header: PyRef<'_, PyHeader>) {
        self.fm().set_header(header.0.to_header());
    }

    /// Sets the header's timestamp to now (milliseconds since the epoch).
    fn update_timestamp(&mut self) {
        self.fm().update_timestamp();
    }

    /// Appends a parameter: bool -> bool, int -> int64 (OverflowError out of
    /// range), float -> double, str -> string, Unknown -> itself; any other
    /// type is a TypeError. No duplicate check (O(1)): adding a key twice
    /// keeps both, lookups find the first; `set` replaces instead.
    fn add(&mut self, device: &str, param: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(device, param, value, Op::Add).map(drop)
    }

    /// Sets a parameter: replaces the value of an existing key (which keeps
    /// its position) or appends it.
    fn set(&mut self, device: &str, param: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(device, param, value, Op::Set).map(drop)
    }

    /// Changes the value of an existing key; returns False, changing
    /// nothing, if the key is absent.
    fn update(&mut self, device: &str, param: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.put(device, param, value, Op::Update)
    }

    /// The value of (device, param), or None. With duplicate keys, the
    /// first.
    fn find<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        param: &str,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.f()
            .find(device, param)
            .map(|v| to_py(py, v))
            .transpose()
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (d, p) = key_pair(key)?;
        let (d, p) = (d.to_str()?, p.to_str()?);
        match self.f().find(d, p) {
            Some(v) => to_py(py, v),
            None => Err(PyKeyError::new_err(((d.to_owned(), p.to_owned()),))),
        }
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (d, p) = key_pair(key)?;
        Ok(self.f().contains(d.to_str()?, p.to_str()?))
    }

    /// The number of parameters.
    fn __len__(&self) -> usize {
        self.f().len()
    }

    /// [(device, param, value), ...] in wire (insertion) order, duplicates
    /// included.
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let mut last: Option<(&str, Bound<'py, PyString>)> = None;
        for (d, p, v) in self.f().iter() {
            let device = match &last {
                Some((name, obj)) if *name == d => obj.clone(),
                _ => {
                    let obj = PyString::new(py, d);
                    last = Some((d, obj.clone()));
                    obj
                }
            };
            let item = PyTuple::new(
                py,
                [
                    device.into_any(),
                    PyString::new(py, p).into_any(),
                    to_py(py, v)?,
                ],
            )?;
            list.append(item)?;
        }
        Ok(list)
    }

    /// {device: {param: value}}; of duplicate keys the first wins, as in
    /// `find`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        let mut devices: HashMap<&str, Bound<'py, PyDict>> = HashMap::new();
        for (d, p, v) in self.f().iter() {
            let inner = match devices.get(d) {
                Some(inner) => inner,
                None => {
                    let inner = PyDict::new(py);
                    out.set_item(d, &inner)?;
                    devices.entry(d).or_insert(inner)
                }
            };
            let p = PyString::new(py, p);
            if !inner.contains(&p)? {
                inner.set_item(p, to_py(py, v)?)?;
            }
        }
        Ok(out)
    }

    /// Builds a frame from {device: {param: value}} in one call; the keyword
    /// arguments are the header's (as for Frame()). Parameters are added in
    /// the mapping's order.
    #[staticmethod]
    #[pyo3(signature = (mapping, *, message_id=0, message_type=0, source=0, target=0, timestamp=None, counter=0, version=1, flags=0))]
    #[allow(clippy::too_many_arguments)]
    fn from_dict(
        mapping: &Bound<'_, PyAny>,
        message_id: i32,
        message_type: i32,
        source: u32,
        target: u32,
        timestamp: Option<u64>,
        counter: u64,
        version: u16,
        flags: u16,
    ) -> PyResult<Self> {
        let mut frame = PyFrame::empty(HeaderFields::new(
            message_id,
            message_type,
            source,
            target,
            timestamp,
            counter,
            version,
            flags,
        ));
        frame.fill_from_mapping(mapping)?;
        Ok(frame)
    }

    /// Appends an attachment: any C-contiguous object with the buffer
    /// protocol (bytes, bytearray, memoryview, numpy arrays of any dtype).
    /// Not copied: the frame holds a read-only view of it until it is
    /// encoded (and after); a bytearray or numpy array cannot be resized
    /// meanwhile, and what is written into it before `encode` is what goes
    /// out.
    fn add_attachment(&mut self, name: &str, buffer: &Bound<'_, PyAny>) -> PyResult<()> {
        let (data, obj) = if let Ok(b) = buffer.cast::<PyBytes>() {
            (share_bytes(b), b.clone().into_any())
        } else {
            let view = byte_view(buffer)?;
            let export = pyo3::buffer::PyUntypedBuffer::get(&view)?;
            (share_export(export)?, view)
        };
        let i = self.f().attachment_count();
        self.views.resize_with(i, || None);
        self.fm().add_attachment(name, data);
        self.views.push(Some(obj.unbind()));
        Ok(())
    }

    /// The data of the first attachment called `name`, as a read-only
    /// memoryview of unsigned bytes into the buffer the frame was decoded
    /// from (or was given): no copy. `np.frombuffer(frame.attachment("iq"),
    /// np.complex64)` shares memory with that buffer. If there is no such
    /// attachment: KeyError, or `default` when one is given.
    #[pyo3(signature = (name, *default))]
    fn attachment<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        default: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if default.len() > 1 {
            return Err(PyTypeError::new_err(format!(
                "attachment() takes at most 2 arguments ({} given)",
                default.len() + 1
            )));
        }
        for (i, (n, data)) in self.f().attachments().enumerate() {
            if n == name {
                return self.view(py, i, data);
            }
        }
        match default.len() {
            0 => Err(PyKeyError::new_err(name.to_owned())),
            _ => default.get_item(0),
        }
    }

    /// [(name, memoryview), ...] in order: every attachment, as
    /// `attachment` returns it.
    fn attachments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for (i, (n, data)) in self.f().attachments().enumerate() {
            list.append((n, self.view(py, i, data)?))?;
        }
        Ok(list)
    }

    /// The frame as bytes: exactly what the Rust library writes for the
    /// same content (and the C++ library, but for the two documented
    /// differences). Large frames are encoded with the interpreter released.
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let len = self.f().encoded_len();
        let frame = self.f();
        new_bytes_with(py, len, |mut out| {
            if len >= RELEASE_GIL_BYTES {
                py.detach(|| frame.encode_to_buf(&mut out))
            } else {
                frame.encode_to_buf(&mut out)
            }
            .map_err(|e| errors::from_encode(&e))
        })
    }

    /// Decodes exactly one frame from a buffer (bytes, bytearray,
    /// memoryview, numpy uint8 array: any C-contiguous buffer). Parameters
    /// are copied into the frame; attachments stay in the buffer, which the
    /// frame keeps a reference to. `strict=True` makes duplicate keys an
    /// error. Raises DecodeError on any malformed input.
    #[staticmethod]
    #[pyo3(signature = (buffer, *, strict=false))]
    fn decode(py: Python<'_>, buffer: &Bound<'_, PyAny>, strict: bool) -> PyResult<Self> {
        let input = acquire(buffer)?;
        let decoder = Decoder::new().strict(strict);
        Ok(PyFrame::decode_input(py, input, &decoder, true, 0)?.0)
    }

    /// Removes every parameter and attachment; the header stays.
    fn clear(&mut self) {
        self.fm().clear();
        self.views.clear();
        self.source = None;
        self.text = 0;
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyFrame>() {
            Ok(o) => match o.try_borrow() {
                Ok(o) => self.frame == o.frame,
                Err(_) => false,
            },
            Err(_) => false,
        }
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let decode = slf.get_type().getattr("decode")?;
        let bytes = slf.borrow().encode(py)?;
        (decode, (bytes,)).into_pyobject(py)
    }

    fn __repr__(&self) -> String {
        let h = self.f().header();
        format!(
            "<messageframe.Frame message_id={} message_type={} source={} target={} \
             counter={}: {} parameters, {} attachments>",
            h.message_id(),
            h.message_type(),
            h.source(),
            h.target(),
            h.counter(),
            self.f().len(),
            self.f().attachment_count()
        )
    }
}
