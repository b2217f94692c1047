//! Adapter from [`LogDensity`] (one draw, full data) to nuts-rs's `CpuLogpFunc`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use nuts_rs::{CpuLogpFunc, CpuMathError, HasDims, LogpError};

use crate::error::Error;
use crate::model::Batch;
use crate::model::LogDensity;

/// The error the adapter hands to nuts-rs: recoverable ([`Error::is_recoverable`], e.g. a
/// non-finite log density) errors become divergences, the others stop the chain.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct AdapterError(pub(crate) Error);

impl LogpError for AdapterError {
    fn is_recoverable(&self) -> bool {
        self.0.is_recoverable()
    }
}

/// Where the adapter keeps the first unrecoverable model error, so that the run can return the
/// model's own [`Error`] rather than nuts-rs's wrapped message.
pub(crate) type FatalSlot = Rc<RefCell<Option<Error>>>;

/// Evaluates a [`LogDensity`] at one position (K = 1) on [`Batch::full`].
pub(crate) struct Adapter<'a> {
    model: &'a dyn LogDensity,
    batch: Batch,
    fatal: FatalSlot,
}

impl<'a> Adapter<'a> {
    /// An adapter for `model`; unrecoverable errors are also stored in `fatal`.
    pub(crate) fn new(model: &'a dyn LogDensity, fatal: FatalSlot) -> Self {
        Adapter {
            model,
            batch: Batch::full(),
            fatal,
        }
    }
}

/// log p and ∇ log p of `model` at `position` (length d), written into `grad`.
///
/// # Errors
/// The model's errors; [`Error::NonFinite`] (recoverable) when log p is NaN or +∞, is −∞ (outside
/// the support), or the gradient is not finite.
pub(crate) fn eval_one(
    model: &dyn LogDensity,
    batch: &Batch,
    position: &[f64],
    grad: &mut [f64],
) -> Result<f64, Error> {
    let mut logp = [0.0];
    model.log_density_and_grad(position, batch, &mut logp, grad)?;
    if !logp[0].is_finite() {
        return Err(Error::non_finite("NUTS log density"));
    }
    if grad.iter().any(|g| !g.is_finite()) {
        return Err(Error::non_finite("NUTS log-density gradient"));
    }
    Ok(logp[0])
}

impl HasDims for Adapter<'_> {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        HashMap::from([(
            "unconstrained_parameter".to_string(),
            self.model.dim() as u64,
        )])
    }
}

impl CpuLogpFunc for Adapter<'_> {
    type LogpError = AdapterError;
    type FlowParameters = ();
    type ExpandedVector = ();

    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn logp(&mut self, position: &[f64], gradient: &mut [f64]) -> Result<f64, AdapterError> {
        match eval_one(self.model, &self.batch, position, gradient) {
            Ok(lp) => Ok(lp),
            Err(e) if e.is_recoverable() => Err(AdapterError(e)),
            Err(e) => {
                // Keep the original error for the caller; nuts-rs gets its message.
                let msg = Error::Model(e.to_string().into());
                let mut slot = self.fatal.borrow_mut();
                if slot.is_none() {
                    *slot = Some(e);
                }
                Err(AdapterError(msg))
            }
        }
    }

    fn expand_vector<R>(&mut self, _rng: &mut R, _array: &[f64]) -> Result<(), CpuMathError>
    where
        R: nuts_rs::rand::Rng + ?Sized,
    {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FnDensity;

    #[test]
    fn non_finite_values_are_recoverable_and_model_errors_are_kept() {
        let m = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
            g[0] = -x[0];
            if x[0] > 1.0 {
                f64::NAN
            } else {
                -0.5 * x[0] * x[0]
            }
        });
        let fatal = FatalSlot::default();
        let mut a = Adapter::new(&m, fatal.clone());
        let mut g = [0.0];
        assert_eq!(a.logp(&[0.0], &mut g).ok(), Some(0.0));
        let e = a.logp(&[2.0], &mut g).unwrap_err();
        assert!(e.is_recoverable());
        assert!(fatal.borrow().is_none());

        // A shape error (wrong position length) is not recoverable and is kept.
        let e = a.logp(&[0.0, 1.0], &mut [0.0, 0.0]).unwrap_err();
        assert!(!e.is_recoverable());
        assert!(matches!(*fatal.borrow(), Some(Error::Shape { .. })));
    }
}
