//! What the two BNN models ([`crate::BnnRegression`], [`crate::BnnClassifier`]) share word for
//! word: the builders of the prior scale and the arithmetic, and the accessors of the network,
//! its inputs, the prior scale and the arithmetic; and the checks of their data.

use smi::{Error, Matrix, Result};

use crate::mlp::{check_finite_rows, Mlp};

/// The methods `with_prior_scale`, `with_precision`, `mlp`, `prior_scale`, `precision` and `x`
/// of a BNN model with the fields `mlp: Mlp`, `x: Arc<Matrix>`, `prior_scale: f64` and
/// `precision: Precision`; expands inside the model's `impl` block.
macro_rules! common_methods {
    () => {
        /// Sets the standard deviation s of the N(0, s²) prior on every weight and bias
        /// (default 1).
        ///
        /// # Errors
        /// [`Error::InvalidSettings`] unless `scale` is positive and finite.
        pub fn with_prior_scale(mut self, scale: f64) -> Result<Self> {
            if !(scale > 0.0 && scale.is_finite()) {
                return Err(Error::invalid(
                    "prior_scale",
                    format!("must be positive and finite, got {scale}"),
                ));
            }
            self.prior_scale = scale;
            Ok(self)
        }

        /// Sets the arithmetic of the network (default [`Precision::F32`]).
        pub fn with_precision(mut self, precision: Precision) -> Self {
            self.precision = precision;
            self
        }

        /// The network.
        pub fn mlp(&self) -> &Mlp {
            &self.mlp
        }

        /// The prior standard deviation of the weights.
        pub fn prior_scale(&self) -> f64 {
            self.prior_scale
        }

        /// The arithmetic of the network.
        pub fn precision(&self) -> Precision {
            self.precision
        }

        /// The inputs (N × in).
        pub fn x(&self) -> &Matrix {
            &self.x
        }
    };
}

pub(crate) use common_methods;

/// The checks both models make of their data: `x` has the network's input width, the
/// `targets` (their name and count) one per row of `x`, at least one row, every input finite.
/// The errors name the model `model`.
///
/// # Errors
/// [`Error::Shape`] for a wrong width or count; [`Error::Data`] for empty data or naming the
/// row of a NaN/inf input.
pub(crate) fn check_data(
    model: &str,
    mlp: &Mlp,
    x: &Matrix,
    (targets, count): (&str, usize),
) -> Result<()> {
    if x.cols() != mlp.input_dim() {
        let what = format!("{model} inputs x (columns)");
        return Err(Error::shape(what, mlp.input_dim(), x.cols()));
    }
    if count != x.rows() {
        let what = format!("{model} {targets} (one per row of x)");
        return Err(Error::shape(what, x.rows(), count));
    }
    if x.rows() == 0 {
        return Err(Error::Data(format!("{model}: the data set is empty")));
    }
    check_finite_rows(x, &format!("{model} inputs x"))
}
