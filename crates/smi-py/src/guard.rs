//! The rules at the Python boundary: counts and sizes are checked before anything is
//! allocated, and no Rust panic reaches Python.
//!
//! - A count (a number of draws, steps, chains, the dimension) must be a Python integer (or
//!   have `__index__`, as NumPy's integers do): anything else is a `TypeError`, a negative or
//!   absurdly large one a `ValueError` naming the parameter, never pyo3's `OverflowError`.
//! - A buffer sized by counts (`n` draws × d numbers) is compared with the machine's physical
//!   memory before it is allocated; one that cannot fit is a `ValueError` naming the parameter
//!   and the sizes, never an allocation failure, which aborts the interpreter.
//! - Every entry point runs its body under [`no_panic`], which turns a panic into `SmiError`
//!   (pyo3's `PanicException` derives from `BaseException`, which `except Exception` misses).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use crate::SmiError;

/// The integer `obj` as a count named `name`, at least `min`.
///
/// # Errors
/// `TypeError` for a bool, a float or another non-integer; `ValueError` below `min` or above
/// `usize::MAX`.
pub fn count(obj: &Bound<'_, PyAny>, name: &str, min: usize) -> PyResult<usize> {
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an integer, not a bool ({obj})"
        )));
    }
    let int = if obj.is_instance_of::<PyInt>() {
        obj.clone()
    } else {
        obj.call_method0("__index__").map_err(|_| {
            let kind = obj
                .get_type()
                .name()
                .map_or_else(|_| "?".to_string(), |n| n.to_string());
            PyTypeError::new_err(format!("{name} must be an integer, not {kind} ({obj})"))
        })?
    };
    let value: i128 = match int.extract() {
        Ok(v) => v,
        Err(_) => {
            return Err(PyValueError::new_err(format!(
                "{name} = {int} is out of range (at most {})",
                usize::MAX
            )))
        }
    };
    if value < min as i128 {
        return Err(PyValueError::new_err(format!(
            "{name} must be at least {min}, got {value}"
        )));
    }
    usize::try_from(value).map_err(|_| {
        PyValueError::new_err(format!(
            "{name} = {value} is out of range (at most {})",
            usize::MAX
        ))
    })
}

/// [`count`] of an optional argument (`None` stays `None`).
pub fn optional_count(
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
    min: usize,
) -> PyResult<Option<usize>> {
    obj.filter(|o| !o.is_none())
        .map(|o| count(o, name, min))
        .transpose()
}

/// Refuses a buffer of `factors` 8-byte numbers (each with what it counts) that the machine's
/// memory cannot hold; `name` is the parameter that asked for it.
///
/// # Errors
/// `ValueError` naming `name` and the sizes.
pub fn fits_in_memory(name: &str, factors: &[(usize, &str)]) -> PyResult<()> {
    let bytes = factors
        .iter()
        .try_fold(8u128, |acc, (v, _)| acc.checked_mul(*v as u128));
    let limit = smi_fit::limits::machine_memory();
    if bytes.is_some_and(|b| b <= u128::from(limit)) {
        return Ok(());
    }
    let detail = factors
        .iter()
        .map(|(v, what)| format!("{v} {what}"))
        .collect::<Vec<_>>()
        .join(" × ");
    let size = bytes.map_or_else(
        || "more bytes than 128 bits count".to_string(),
        smi_fit::limits::human,
    );
    Err(PyValueError::new_err(format!(
        "{name} is too large: {detail} 8-byte numbers need {size}, more than this machine's \
         memory ({})",
        smi_fit::limits::human(u128::from(limit))
    )))
}

/// Runs `f`, turning a panic into `SmiError` with its message (a last resort: every path a
/// user can reach returns an error instead).
pub fn no_panic<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        Err(SmiError::new_err(format!(
            "internal error (a bug in smi; please report it): {message}"
        )))
    })
}
