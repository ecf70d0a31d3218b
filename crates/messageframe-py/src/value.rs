//! Parameter values between Python and Rust, and `messageframe.Unknown`.

use messageframe::{UnknownValue, ValueRef};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString, PyTuple};

/// A value whose tag this library does not know (anything but 10, 20, 30,
/// 40), kept as its raw MessagePack bytes and written back unchanged, so a
/// relay never destroys what it does not understand.
///
/// Unknown(tag, raw): `tag` is any MessagePack integer (-2**63 .. 2**64-1)
/// but 10, 20, 30 and 40; `raw` is exactly one MessagePack value (else
/// ValueError). Immutable, hashable, comparable.
#[pyclass(module = "messageframe", name = "Unknown", frozen)]
pub(crate) struct PyUnknown {
    tag: i128,
    raw: Py<PyBytes>,
}

impl PyUnknown {
    fn raw_bytes<'a>(&'a self, py: Python<'a>) -> &'a [u8] {
        self.raw.bind(py).as_bytes()
    }

    /// As the library's borrowed unknown value (checked at construction).
    pub(crate) fn as_value<'a>(&'a self, py: Python<'a>) -> UnknownValue<'a> {
        UnknownValue::new(self.tag, self.raw_bytes(py))
            .expect("an Unknown is checked when it is made")
    }
}

#[pymethods]
impl PyUnknown {
    #[new]
    fn new(tag: &Bound<'_, PyInt>, raw: &Bound<'_, PyBytes>) -> PyResult<Self> {
        let tag: i128 = tag.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "tag {tag} is not a MessagePack integer (-2**63 .. 2**64-1)"
            ))
        })?;
        if UnknownValue::new(tag, raw.as_bytes()).is_none() {
            return Err(PyValueError::new_err(if matches!(tag, 10 | 20 | 30 | 40) {
                format!("tag {tag} is a known type's tag (10, 20, 30, 40), not an unknown one")
            } else if !(i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(&tag) {
                format!("tag {tag} is not a MessagePack integer (-2**63 .. 2**64-1)")
            } else {
                "raw must be exactly one complete MessagePack value".to_owned()
            }));
        }
        Ok(PyUnknown {
            tag,
            raw: raw.clone().unbind(),
        })
    }

    /// The wire tag (an int: any MessagePack integer but 10, 20, 30, 40).
    #[getter]
    fn tag(&self) -> i128 {
        self.tag
    }

    /// The value's MessagePack bytes, exactly as on the wire.
    #[getter]
    fn raw(&self, py: Python<'_>) -> Py<PyBytes> {
        self.raw.clone_ref(py)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<PyUnknown>() {
            Ok(o) => {
                let o = o.get();
                self.tag == o.tag && self.raw_bytes(py) == o.raw_bytes(py)
            }
            Err(_) => false,
        }
    }

    fn __hash__(&self, py: Python<'_>) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.tag.hash(&mut h);
        self.raw_bytes(py).hash(&mut h);
        h.finish()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Unknown(tag={}, raw={})",
            self.tag,
            self.raw.bind(py).repr()?
        ))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let me = slf.get();
        (slf.get_type(), (me.tag, me.raw.clone_ref(py))).into_pyobject(py)
    }
}

/// Reads a Python value for `add`/`set`/`update`: `bool` → Bool, `int` →
/// Int64 (OverflowError outside i64), `float` → Double, `str` → String,
/// `Unknown` → itself; anything else is a TypeError naming the type.
pub(crate) fn from_py<'a>(
    value: &'a Bound<'_, PyAny>,
    device: &str,
    param: &str,
) -> PyResult<ValueRef<'a>> {
    let v = if let Ok(b) = value.cast::<PyBool>() {
        ValueRef::Bool(b.is_true())
    } else if value.is_instance_of::<PyInt>() {
        ValueRef::Int(value.extract::<i64>().map_err(|_| {
            PyOverflowError::new_err(format!(
                "{value} is out of the int64 range for parameter ({device:?}, {param:?})"
            ))
        })?)
    } else if let Ok(f) = value.cast::<PyFloat>() {
        ValueRef::Double(f.value())
    } else if let Ok(s) = value.cast::<PyString>() {
        ValueRef::String(s.to_str()?)
    } else if let Ok(u) = value.cast::<PyUnknown>() {
        ValueRef::Unknown(u.get().as_value(value.py()))
    } else {
        let ty = value.get_type();
        let name = match (ty.module(), ty.qualname()) {
            (Ok(m), Ok(q)) if m.to_str().is_ok_and(|m| m != "builtins") => format!("{m}.{q}"),
            (_, Ok(q)) => q.to_string(),
            _ => "?".to_owned(),
        };
        return Err(PyTypeError::new_err(format!(
            "unsupported value type '{name}' for parameter ({device:?}, {param:?}): \
             expected bool, int, float, str or messageframe.Unknown"
        )));
    };
    Ok(v)
}

/// A value as a Python object.
pub(crate) fn to_py<'py>(py: Python<'py>, v: ValueRef<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        ValueRef::Int(i) => i.into_pyobject(py)?.into_any(),
        ValueRef::Double(x) => PyFloat::new(py, x).into_any(),
        ValueRef::String(s) => PyString::new(py, s).into_any(),
        ValueRef::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        ValueRef::Unknown(u) => Bound::new(
            py,
            PyUnknown {
                tag: u.tag(),
                raw: PyBytes::new(py, u.raw()).unbind(),
            },
        )?
        .into_any(),
        other => {
            return Err(PyValueError::new_err(format!(
                "a value of a type this version cannot show: {other:?}"
            )))
        }
    })
}
