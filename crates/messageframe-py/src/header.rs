//! `messageframe.Header`: the eight header fields, an immutable value.

use messageframe::{now_millis, Header};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// A frame's header: eight integers a router can read without touching the
/// payload. Immutable (hashable, comparable); `replace(**changes)` returns
/// a changed copy, and `frame.header = header` sets a frame's header.
///
/// Header(message_id=0, message_type=0, source=0, target=0, timestamp=None,
///        counter=0, version=1, flags=0)
///
/// `timestamp` defaults to now, in milliseconds since the UNIX epoch.
/// Ranges: timestamp and counter u64, source and target u32, message_id
/// and message_type i32, version and flags u16; a value out of range is an
/// OverflowError.
#[pyclass(module = "messageframe", name = "Header", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct PyHeader(pub(crate) HeaderFields);

/// The fields, hashable (`Header` has no `Hash`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct HeaderFields {
    pub timestamp: u64,
    pub counter: u64,
    pub source: u32,
    pub target: u32,
    pub message_id: i32,
    pub message_type: i32,
    pub version: u16,
    pub flags: u16,
}

impl HeaderFields {
    /// From the constructor's arguments (`None` timestamp: now).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        message_id: i32,
        message_type: i32,
        source: u32,
        target: u32,
        timestamp: Option<u64>,
        counter: u64,
        version: u16,
        flags: u16,
    ) -> Self {
        HeaderFields {
            timestamp: timestamp.unwrap_or_else(now_millis),
            counter,
            source,
            target,
            message_id,
            message_type,
            version,
            flags,
        }
    }

    pub(crate) fn to_header(self) -> Header {
        Header::from_fields(
            self.timestamp,
            self.counter,
            self.source,
            self.target,
            self.message_id,
            self.message_type,
            self.version,
            self.flags,
        )
    }

    pub(crate) fn of(h: &Header) -> Self {
        HeaderFields {
            timestamp: h.timestamp(),
            counter: h.counter(),
            source: h.source(),
            target: h.target(),
            message_id: h.message_id(),
            message_type: h.message_type(),
            version: h.version(),
            flags: h.flags(),
        }
    }
}

#[pymethods]
impl PyHeader {
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
        PyHeader(HeaderFields::new(
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

    /// Milliseconds since the UNIX epoch (u64).
    #[getter]
    fn timestamp(&self) -> u64 {
        self.0.timestamp
    }
    /// Message counter (u64).
    #[getter]
    fn counter(&self) -> u64 {
        self.0.counter
    }
    /// Source node id (u32).
    #[getter]
    fn source(&self) -> u32 {
        self.0.source
    }
    /// Target node id (u32).
    #[getter]
    fn target(&self) -> u32 {
        self.0.target
    }
    /// Application message id (i32).
    #[getter]
    fn message_id(&self) -> i32 {
        self.0.message_id
    }
    /// Application message type (i32).
    #[getter]
    fn message_type(&self) -> i32 {
        self.0.message_type
    }
    /// Protocol version (u16).
    #[getter]
    fn version(&self) -> u16 {
        self.0.version
    }
    /// Application flags (u16).
    #[getter]
    fn flags(&self) -> u16 {
        self.0.flags
    }

    /// A copy with the given fields changed: `h.replace(counter=h.counter + 1)`.
    #[pyo3(signature = (**changes))]
    fn replace(&self, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut f = self.0;
        if let Some(changes) = changes {
            for (name, value) in changes.iter() {
                let name: String = name.extract()?;
                match name.as_str() {
                    "timestamp" => f.timestamp = value.extract()?,
                    "counter" => f.counter = value.extract()?,
                    "source" => f.source = value.extract()?,
                    "target" => f.target = value.extract()?,
                    "message_id" => f.message_id = value.extract()?,
                    "message_type" => f.message_type = value.extract()?,
                    "version" => f.version = value.extract()?,
                    "flags" => f.flags = value.extract()?,
                    other => {
                        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                            "replace() got an unexpected keyword argument '{other}'"
                        )))
                    }
                }
            }
        }
        Ok(PyHeader(f))
    }

    /// The fields as a dict, in wire order.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let f = &self.0;
        d.set_item("timestamp", f.timestamp)?;
        d.set_item("counter", f.counter)?;
        d.set_item("source", f.source)?;
        d.set_item("target", f.target)?;
        d.set_item("message_id", f.message_id)?;
        d.set_item("message_type", f.message_type)?;
        d.set_item("version", f.version)?;
        d.set_item("flags", f.flags)?;
        Ok(d)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let f = &slf.get().0;
        let args = (
            f.message_id,
            f.message_type,
            f.source,
            f.target,
            f.timestamp,
            f.counter,
            f.version,
            f.flags,
        );
        (slf.get_type(), args).into_pyobject(py)
    }

    fn __repr__(&self) -> String {
        let f = &self.0;
        format!(
            "Header(message_id={}, message_type={}, source={}, target={}, timestamp={}, \
             counter={}, version={}, flags={})",
            f.message_id,
            f.message_type,
            f.source,
            f.target,
            f.timestamp,
            f.counter,
            f.version,
            f.flags
        )
    }
}
