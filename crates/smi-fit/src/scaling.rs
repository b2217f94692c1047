//! Standardisation that cannot overflow.
//!
//! The textbook (x − mean) / std overflows for values beyond about 1e154: (x − mean)² is
//! infinite, so std is infinite and the inputs become NaN. Here every column is first divided
//! by the power of two p at most its largest |x|, so the values lie in (−2, 2), mean and std
//! are computed on those, and multiplied back by p. Scaling by a power of two is exact, so for
//! every column that the textbook formula handles the result is bit for bit the same (and
//! `smi fit` keeps matching `smi reproduce uci`, which standardises with
//! [`smi_data::Standardizer`]); for larger values it stays finite.
//!
//! Applying works the same way: z = (x/p − mean/p) / (std/p) with p the power of two at most
//! std, equal to (x − mean) / std wherever that is finite, and finite wherever z is
//! representable.

use anyhow::{bail, Result};

use super::model_file::Scaler;

/// The largest power of two at most |a|; 1 for zero, subnormal or non-finite `a`.
fn pow2_floor(a: f64) -> f64 {
    let p = f64::from_bits(a.abs().to_bits() & 0x7FF0_0000_0000_0000);
    if p.is_normal() {
        p
    } else {
        1.0
    }
}

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
        let n = rows as f64;
        let mut mean = vec![0.0; cols];
        let mut std = vec![1.0; cols];
        for c in 0..cols {
            let col = || x.iter().skip(c).step_by(cols).copied();
            let first = x[c];
            if col().all(|v| v == first) {
                mean[c] = first;
                continue;
            }
            let p = pow2_floor(col().fold(0.0, |m: f64, v| m.max(v.abs())));
            let m = col().map(|v| v / p).sum::<f64>() / n;
            let var = col().map(|v| (v / p - m) * (v / p - m)).sum::<f64>() / n;
            let s = var.sqrt();
            mean[c] = m * p;
            if s != 0.0 {
                std[c] = s * p;
            }
            if !(mean[c].is_finite() && std[c].is_finite() && std[c] > 0.0) {
                bail!(
                    "cannot standardise column {}: its values are too large (mean {}, std {})",
                    c + 1,
                    mean[c],
                    std[c]
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
        if cols == 0 {
            return Ok(());
        }
        let scaled: Vec<(f64, f64, f64)> = self
            .mean
            .iter()
            .zip(&self.std)
            .map(|(&m, &s)| {
                let p = pow2_floor(s);
                (p, m / p, s / p)
            })
            .collect();
        for (r, row) in x.chunks_mut(cols).enumerate() {
            for (c, (v, &(p, m, s))) in row.iter_mut().zip(&scaled).enumerate() {
                let z = (*v / p - m) / s;
                if !z.is_finite() {
                    return Err((r, c));
                }
                *v = z;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smi_data::Standardizer;

    /// Bit-for-bit the textbook standardisation wherever that is finite.
    #[test]
    fn matches_the_textbook_standardizer() {
        let x: Vec<f64> = (0..300)
            .map(|i| ((i * 7919) % 1000) as f64 * 0.37 - 120.0 + (i % 3) as f64 * 1e-3)
            .collect();
        for cols in [1, 2, 3] {
            let rows = x.len() / cols;
            let x = &x[..rows * cols];
            let ours = Scaler::fit(x, rows, cols).unwrap();
            let theirs = Standardizer::fit(x, rows, cols).unwrap();
            assert_eq!(ours.mean, theirs.mean);
            assert_eq!(ours.std, theirs.std);
            let (mut a, mut b) = (x.to_vec(), x.to_vec());
            ours.apply(&mut a).unwrap();
            theirs.apply(&mut b);
            assert_eq!(a, b);
        }
        let c = Scaler::fit(&[4.0, 4.0], 2, 1).unwrap();
        assert_eq!((c.mean[0], c.std[0]), (4.0, 1.0));
    }

    /// Values far beyond 1e154 (where (x − mean)² overflows) give a finite scaler and finite
    /// standardised values.
    #[test]
    fn huge_values_do_not_overflow() {
        let x = [1e300, -1e300, 3e307, 1.0, -f64::MAX, f64::MAX];
        let textbook = Standardizer::fit(&x, x.len(), 1).unwrap();
        assert!(
            !textbook.std[0].is_finite(),
            "the textbook scaler overflows"
        );
        let s = Scaler::fit(&x, x.len(), 1).unwrap();
        assert!(s.mean[0].is_finite() && s.std[0].is_finite() && s.std[0] > 0.0);
        let mut z = x.to_vec();
        s.apply(&mut z).unwrap();
        assert!(z.iter().all(|v| v.is_finite() && v.abs() < 3.0), "{z:?}");
        // A value whose z-score is not representable is reported, not turned into inf.
        let tiny = Scaler {
            mean: vec![0.0],
            std: vec![1e-300],
        };
        let mut v = [1.0, 1e300];
        assert_eq!(tiny.apply(&mut v), Err((1, 0)));
        assert!(Scaler::fit(&[1.0, f64::NAN], 2, 1).is_err());
        assert!(Scaler::fit(&[], 0, 1).is_err());
    }
}
