//! Standardisation with training statistics and the validation hold-out (docs/algorithms.md §7.3).

use crate::error::{Error, Result};
use crate::legacy_rng::LegacyRandomState;
use crate::uci::Split;

/// A dense row-major matrix of features.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Features {
    /// Values, row after row (`rows × cols`).
    pub values: Vec<f64>,
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
}

impl Features {
    /// Row `i` (`None` if out of range).
    pub fn row(&self, i: usize) -> Option<&[f64]> {
        if i < self.rows {
            self.values.get(i * self.cols..(i + 1) * self.cols)
        } else {
            None
        }
    }
}

/// Per-column affine standardisation `(x − mean) / std`, which cannot overflow.
///
/// The textbook formulas overflow for values beyond about 1e154: (x − mean)² is infinite, so
/// std is infinite and the inputs become NaN. Wherever the textbook mean, std or standardised
/// value is not finite, it is computed again on the values divided by a power of two p (at most
/// the column's largest |x| when fitting, at most std when applying) and multiplied back, so
/// it stays finite for finite inputs; everywhere else the result is the textbook one, bit for
/// bit.
#[derive(Clone, Debug, PartialEq)]
pub struct Standardizer {
    /// Column means of the fitting data.
    pub mean: Vec<f64>,
    /// Column population (ddof 0) standard deviations; 1 for constant columns.
    pub std: Vec<f64>,
}

/// The largest power of two at most |a|; 1 for zero, subnormal or non-finite `a`.
fn pow2_floor(a: f64) -> f64 {
    let p = f64::from_bits(a.abs().to_bits() & 0x7FF0_0000_0000_0000);
    if p.is_normal() {
        p
    } else {
        1.0
    }
}

/// Mean and ddof-0 std of the `n` values `col()` divided by `p`, multiplied back by `p`.
fn mean_std<I: Iterator<Item = f64>>(col: impl Fn() -> I, n: f64, p: f64) -> (f64, f64) {
    let m = col().map(|v| v / p).sum::<f64>() / n;
    let var = col().map(|v| (v / p - m) * (v / p - m)).sum::<f64>() / n;
    (m * p, var.sqrt() * p)
}

impl Standardizer {
    /// Fits mean and ddof-0 std per column of a row-major `rows × cols` matrix.
    ///
    /// A column whose values are all identical gets mean = that value and std = 1 (the paper
    /// replaces a zero std by 1; checking for a constant column, rather than `std == 0`, avoids a
    /// tiny non-zero std from rounding in the mean, e.g. Naval's constant columns 8 and 11).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `rows == 0` or `x.len() != rows·cols`.
    pub fn fit(x: &[f64], rows: usize, cols: usize) -> Result<Self> {
        if rows == 0 {
            return Err(Error::invalid("rows", "cannot standardise with no rows"));
        }
        if rows.checked_mul(cols) != Some(x.len()) {
            return Err(Error::invalid(
                "x",
                format!("length {} is not rows·cols = {rows}·{cols}", x.len()),
            ));
        }
        let n = rows as f64;
        let mut mean = vec![0.0; cols];
        let mut std = vec![0.0; cols];
        for c in 0..cols {
            let col = || x.iter().skip(c).step_by(cols).copied();
            let first = x[c];
            if col().all(|v| v == first) {
                mean[c] = first;
                std[c] = 1.0;
                continue;
            }
            let (mut m, mut s) = mean_std(col, n, 1.0);
            if !(m.is_finite() && s.is_finite()) {
                (m, s) = mean_std(
                    col,
                    n,
                    pow2_floor(col().fold(0.0, |a: f64, v| a.max(v.abs()))),
                );
            }
            mean[c] = m;
            std[c] = if s == 0.0 { 1.0 } else { s };
        }
        Ok(Standardizer { mean, std })
    }

    /// Standardises a row-major matrix with `self.mean.len()` columns in place.
    pub fn apply(&self, x: &mut [f64]) {
        // Every value is standardised: a non-finite one does not stop it.
        let _ = self.apply_until(x, false);
    }

    /// Standardises a row-major matrix with `self.mean.len()` columns in place, up to the first
    /// value whose standardised value is not finite (a non-finite input, or one so far from the
    /// mean that (x − mean)/std overflows).
    ///
    /// # Errors
    /// `(row, column)` (0-based) of that value; it and the values after it are unchanged.
    pub fn try_apply(&self, x: &mut [f64]) -> std::result::Result<(), (usize, usize)> {
        self.apply_until(x, true)
    }

    fn apply_until(&self, x: &mut [f64], stop: bool) -> std::result::Result<(), (usize, usize)> {
        let cols = self.mean.len();
        if cols == 0 {
            return Ok(());
        }
        for (r, row) in x.chunks_mut(cols).enumerate() {
            for (c, ((v, &m), &s)) in row.iter_mut().zip(&self.mean).zip(&self.std).enumerate() {
                let mut z = (*v - m) / s;
                if !z.is_finite() {
                    let p = pow2_floor(s);
                    z = (*v / p - m / p) / (s / p);
                    if stop && !z.is_finite() {
                        return Err((r, c));
                    }
                }
                *v = z;
            }
        }
        Ok(())
    }
}

/// One split's data ready for fitting: standardised x, raw y.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// Training inputs (`n_train × d`), standardised with the training statistics.
    pub x_train: Features,
    /// Training responses (raw units).
    pub y_train: Vec<f64>,
    /// Test inputs (`n_test × d`), standardised with the *training* statistics.
    pub x_test: Features,
    /// Test responses (raw units, so RMSE and NLL are in original units).
    pub y_test: Vec<f64>,
    /// The training statistics used for both sets.
    pub standardizer: Standardizer,
}

/// Gathers the split's rows of `x` (row-major, `cols` wide) and `y`, and standardises x with the
/// training rows' statistics ([`Standardizer::fit`]); y is left as is.
///
/// # Errors
/// [`Error::SplitRowOutOfRange`] if a row index is `≥ y.len()`, [`Error::InvalidArgument`] if the
/// training set is empty or `x.len() != y.len()·cols`.
pub fn prepare(x: &[f64], y: &[f64], cols: usize, split: &Split) -> Result<Prepared> {
    let rows = y.len();
    if rows.checked_mul(cols) != Some(x.len()) {
        return Err(Error::invalid(
            "x",
            format!("length {} is not rows·cols = {rows}·{cols}", x.len()),
        ));
    }
    let gather = |idx: &[usize]| -> Result<(Features, Vec<f64>)> {
        let mut values = Vec::with_capacity(idx.len() * cols);
        let mut ys = Vec::with_capacity(idx.len());
        for &r in idx {
            if r >= rows {
                return Err(Error::SplitRowOutOfRange {
                    dataset: String::from("data"),
                    row: r,
                    rows,
                });
            }
            values.extend_from_slice(&x[r * cols..(r + 1) * cols]);
            ys.push(y[r]);
        }
        Ok((
            Features {
                values,
                rows: idx.len(),
                cols,
            },
            ys,
        ))
    };
    let (mut x_train, y_train) = gather(&split.train)?;
    let (mut x_test, y_test) = gather(&split.test)?;
    let standardizer = Standardizer::fit(&x_train.values, x_train.rows, cols)?;
    standardizer.apply(&mut x_train.values);
    standardizer.apply(&mut x_test.values);
    Ok(Prepared {
        x_train,
        y_train,
        x_test,
        y_test,
        standardizer,
    })
}

/// scikit-learn's `train_test_split(range(n), test_size=test_fraction, random_state=seed)`,
/// reproduced bit-exactly: returns `(train_positions, test_positions)`.
///
/// `n_test = ceil(test_fraction · n)` (in `f64`, as Python computes it), `n_train = n − n_test`;
/// `perm = RandomState(seed).permutation(n)` (numpy's legacy MT19937 shuffle, see
/// [`LegacyRandomState::permutation`]); test = `perm[..n_test]`, train = `perm[n_test..]`.
///
/// # Errors
/// [`Error::InvalidArgument`] if `test_fraction` is not in (0, 1) or either side would be empty.
pub fn train_test_split_indices(
    n: usize,
    test_fraction: f64,
    seed: u32,
) -> Result<(Vec<usize>, Vec<usize>)> {
    if !(test_fraction > 0.0 && test_fraction < 1.0) {
        return Err(Error::invalid(
            "test_fraction",
            format!("must be in (0, 1), got {test_fraction}"),
        ));
    }
    // In [0, n], so the cast is exact.
    let n_test = (test_fraction * n as f64).ceil() as usize;
    if n_test == 0 || n_test >= n {
        return Err(Error::invalid(
            "test_fraction",
            format!("{test_fraction} of {n} rows leaves an empty train or test set"),
        ));
    }
    let perm = LegacyRandomState::new(seed).permutation(n);
    let test = perm[..n_test].to_vec();
    let train = perm[n_test..].to_vec();
    Ok((train, test))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardizer_uses_ddof0_and_constant_columns_get_std_one() {
        // col 0: 1,2,3,4 (mean 2.5, var 1.25); col 1: constant 0.998.
        let x = [1.0, 0.998, 2.0, 0.998, 3.0, 0.998, 4.0, 0.998];
        let s = Standardizer::fit(&x, 4, 2).unwrap();
        assert_eq!(s.mean, vec![2.5, 0.998]);
        assert!((s.std[0] - 1.25f64.sqrt()).abs() < 1e-15);
        assert_eq!(s.std[1], 1.0);
        let mut y = x;
        s.apply(&mut y);
        assert_eq!(y[1], 0.0);
        assert!((y[0] + 1.5 / 1.25f64.sqrt()).abs() < 1e-15);
        assert!(Standardizer::fit(&x, 0, 2).is_err());
        assert!(Standardizer::fit(&x, 3, 2).is_err());
    }

    /// The textbook mean and ddof-0 std per column (constant columns get std 1), which
    /// overflows beyond about 1e154.
    fn textbook_fit(x: &[f64], rows: usize, cols: usize) -> (Vec<f64>, Vec<f64>) {
        let n = rows as f64;
        (0..cols)
            .map(|c| {
                let col = || x.iter().skip(c).step_by(cols).copied();
                if col().all(|v| v == x[c]) {
                    return (x[c], 1.0);
                }
                let m = col().sum::<f64>() / n;
                let s = (col().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt();
                (m, if s == 0.0 { 1.0 } else { s })
            })
            .unzip()
    }

    /// Bit-for-bit the textbook standardisation wherever that is finite.
    #[test]
    fn matches_the_textbook_standardisation() {
        let x: Vec<f64> = (0..300)
            .map(|i| ((i * 7919) % 1000) as f64 * 0.37 - 120.0 + (i % 3) as f64 * 1e-3)
            .collect();
        for cols in [1, 2, 3] {
            let rows = x.len() / cols;
            let x = &x[..rows * cols];
            let s = Standardizer::fit(x, rows, cols).unwrap();
            let (mean, std) = textbook_fit(x, rows, cols);
            assert_eq!((&s.mean, &s.std), (&mean, &std));
            let mut a = x.to_vec();
            s.apply(&mut a);
            let b: Vec<f64> = x
                .iter()
                .enumerate()
                .map(|(i, v)| (v - mean[i % cols]) / std[i % cols])
                .collect();
            assert_eq!(a, b);
        }
        let c = Standardizer::fit(&[4.0, 4.0], 2, 1).unwrap();
        assert_eq!((c.mean[0], c.std[0]), (4.0, 1.0));
    }

    /// Values far beyond 1e154 (where (x − mean)² overflows) give a finite standardiser and
    /// finite standardised values.
    #[test]
    fn huge_values_do_not_overflow() {
        let x = [1e300, -1e300, 3e307, 1.0, -f64::MAX, f64::MAX];
        let (_, textbook_std) = textbook_fit(&x, x.len(), 1);
        assert!(
            !textbook_std[0].is_finite(),
            "the textbook scaler overflows"
        );
        let s = Standardizer::fit(&x, x.len(), 1).unwrap();
        assert!(s.mean[0].is_finite() && s.std[0].is_finite() && s.std[0] > 0.0);
        let mut z = x.to_vec();
        s.try_apply(&mut z).unwrap();
        assert!(z.iter().all(|v| v.is_finite() && v.abs() < 3.0), "{z:?}");
        // A value whose z-score is not representable is reported, not turned into inf.
        let tiny = Standardizer {
            mean: vec![0.0],
            std: vec![1e-300],
        };
        let mut v = [1.0, 1e300];
        assert_eq!(tiny.try_apply(&mut v), Err((1, 0)));
        assert!(v[0].is_finite() && v[0] > 1e299 && v[1] == 1e300, "{v:?}");
        tiny.apply(&mut v);
        assert_eq!(v[1], f64::INFINITY);
    }

    #[test]
    fn prepare_uses_training_statistics_only() {
        let x = [0.0, 2.0, 4.0, 100.0];
        let y = [1.0, 2.0, 3.0, 4.0];
        let split = Split {
            train: vec![0, 1, 2],
            test: vec![3],
        };
        let p = prepare(&x, &y, 1, &split).unwrap();
        let sd = (8.0f64 / 3.0).sqrt();
        assert_eq!(p.standardizer.mean, vec![2.0]);
        assert!((p.x_test.values[0] - 98.0 / sd).abs() < 1e-12);
        assert_eq!(p.y_test, vec![4.0]);
        assert_eq!(p.y_train, vec![1.0, 2.0, 3.0]);
        assert_eq!(p.x_train.row(2).map(|r| r.len()), Some(1));
        let bad = Split {
            train: vec![0, 9],
            test: vec![],
        };
        assert!(matches!(
            prepare(&x, &y, 1, &bad),
            Err(Error::SplitRowOutOfRange {
                row: 9,
                rows: 4,
                ..
            })
        ));
    }

    #[test]
    fn sklearn_split_matches_numpy() {
        // python: from sklearn.model_selection import train_test_split uses
        //   n_test = ceil(0.1 * n); perm = np.random.RandomState(10).permutation(n)
        //   test = perm[:n_test]; train = perm[n_test:]
        // np.random.RandomState(10).permutation(455)[:8] = [226, 131, 116, 307, 65, 78, 172, 207]
        let (tr, te) = train_test_split_indices(455, 0.1, 10).unwrap();
        assert_eq!(te.len(), 46);
        assert_eq!(tr.len(), 409);
        assert_eq!(&te[..8], &[226, 131, 116, 307, 65, 78, 172, 207]);
        assert_eq!(&tr[406..], &[15, 125, 265]);
        assert!(train_test_split_indices(455, 0.0, 10).is_err());
        assert!(train_test_split_indices(1, 0.5, 10).is_err());
    }
}
