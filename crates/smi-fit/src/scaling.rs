//! Standardisation that cannot overflow: [`smi_data::Standardizer`] (which computes again on
//! the values divided by a power of two wherever the textbook (x − mean) / std overflows, and is
//! bit for bit the textbook one elsewhere, so `smi fit` keeps matching `smi reproduce uci`), with
//! checks that the data and the statistics are finite.

use anyhow::{bail, Result};
use smi_data::Standardizer;

use super::model_file::Scaler;

impl Scaler {
    /// Mean and ddof-0 std per column of the row-major `rows × cols` matrix `x` of finite
    /// values; a constant column gets mean = its value and std = 1, as does a column whose std
    /// is zero (the rules of [`smi_data::Standardizer::fit`]).
    ///
    /// # Errors
    /// No rows, a length that is not rows·cols, a non-finite value.
    pub fn fit(x: &[f64], rows: usize, cols: usize) -> Result<Scaler> {
        if rows == 0 {
            bail!("cannot standardise with no rows");
        }
        if rows.checked_mul(cols) != Some(x.len()) {
            bail!("internal: {} values are not {rows} × {cols}", x.len());
        }
        if let Some(i) = x.iter().position(|v| !v.is_finite()) {
            bail!(
                "cannot standardise: row {}, column {} is {}",
                i / cols + 1,
                i % cols + 1,
                x[i]
            );
        }
        let Standardizer { mean, std } = Standardizer::fit(x, rows, cols)?;
        for (c, (m, s)) in mean.iter().zip(&std).enumerate() {
            if !(m.is_finite() && s.is_finite() && *s > 0.0) {
                bail!(
                    "cannot standardise column {}: its values are too large (mean {m}, std {s})",
                    c + 1
                );
            }
        }
        Ok(Scaler { mean, std })
    }

    /// Standardises the row-major matrix `x` (`self.mean.len()` columns) in place.
    ///
    /// # Errors
    /// `(row, column)` (0-based) of the first value whose standardised value is not finite (a
    /// non-finite input, or one so far from the mean that (x − mean)/std overflows); the
    /// values before it are standardised, the rest unchanged.
    pub fn apply(&self, x: &mut [f64]) -> std::result::Result<(), (usize, usize)> {
        let cols = self.mean.len().min(self.std.len());
        Standardizer {
            mean: self.mean[..cols].to_vec(),
            std: self.std[..cols].to_vec(),
        }
        .try_apply(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statistics and standardised values of [`Standardizer`], which is bit for bit the
    /// textbook standardisation wherever that is finite (checked in smi-data's tests).
    #[test]
    fn matches_the_textbook_standardizer() {
        let x = [1.0, 0.998, -2.5, 0.998, 3.25, 0.998, 40.0, 0.998];
        let ours = Scaler::fit(&x, 4, 2).unwrap();
        let theirs = Standardizer::fit(&x, 4, 2).unwrap();
        assert_eq!((&ours.mean, &ours.std), (&theirs.mean, &theirs.std));
        let (mut a, mut b) = (x, x);
        ours.apply(&mut a).unwrap();
        theirs.apply(&mut b);
        assert_eq!(a, b);
        assert_eq!((ours.mean[1], ours.std[1]), (0.998, 1.0));
    }

    /// Values far beyond 1e154 (where (x − mean)² overflows) give a finite scaler, the one of
    /// [`Standardizer`] (whose own tests check the standardised values); non-finite inputs and
    /// z-scores are errors.
    #[test]
    fn huge_values_do_not_overflow() {
        let x = [1e300, -1e300, 3e307, 1.0, -f64::MAX, f64::MAX];
        let s = Scaler::fit(&x, x.len(), 1).unwrap();
        assert!(s.mean[0].is_finite() && s.std[0].is_finite() && s.std[0] > 0.0);
        let theirs = Standardizer::fit(&x, x.len(), 1).unwrap();
        assert_eq!((s.mean, s.std), (theirs.mean, theirs.std));
        let tiny = Scaler {
            mean: vec![0.0],
            std: vec![1e-300],
        };
        assert_eq!(tiny.apply(&mut [1.0, 1e300]), Err((1, 0)));
        assert!(Scaler::fit(&[1.0, f64::NAN], 2, 1).is_err());
        assert!(Scaler::fit(&[], 0, 1).is_err());
    }
}
