//! The median bandwidth h = median(D)² · f(m) + eps shared by the RBF and random-feature kernels.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::linalg::{gemm, Op};
use crate::matrix::Matrix;

/// f(m) in the median bandwidth h = median(D)² · f(m) + eps (docs/algorithms.md §3, NumPyro's
/// `bandwidth_factor`).
///
/// Serialised as `"inverse_log"`, `"inverse_log_plus_one"` or `{"constant": f}`.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BandwidthFactor {
    /// f(m) = 1/ln m (NumPyro's default).
    #[default]
    InverseLog,
    /// f(m) = 1/ln(m + 1) (the original SVGD paper).
    InverseLogPlusOne,
    /// f(m) = the given constant (must be finite and > 0).
    Constant(f64),
}

impl BandwidthFactor {
    /// f(m) for m ≥ 2 particles.
    pub fn value(self, m: usize) -> f64 {
        match self {
            BandwidthFactor::InverseLog => 1.0 / (m as f64).ln(),
            BandwidthFactor::InverseLogPlusOne => 1.0 / (m as f64 + 1.0).ln(),
            BandwidthFactor::Constant(f) => f,
        }
    }

    /// Checks the factor.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (`bandwidth_factor`) for a constant that is not finite and > 0.
    pub fn validate(self) -> Result<()> {
        match self {
            BandwidthFactor::Constant(f) if !(f.is_finite() && f > 0.0) => Err(Error::invalid(
                "bandwidth_factor",
                format!("a constant bandwidth factor must be finite and > 0, got {f}"),
            )),
            _ => Ok(()),
        }
    }
}

/// The m×m matrix of squared Euclidean distances, entry (i, j) = max(‖x_i‖² + ‖x_j‖² − 2x_iᵀx_j, 0).
///
/// `particles` is m×p. Uses one m×p by p×m product (no m×m×p buffer); the diagonal is exactly 0.
pub fn squared_distances(particles: &Matrix) -> Matrix {
    let (m, p) = (particles.rows(), particles.cols());
    let mut g = Matrix::zeros(m, m);
    gemm(
        g.as_mut_slice(),
        particles.as_slice(),
        Op::N,
        particles.as_slice(),
        Op::T,
        m,
        p,
        m,
        1.0,
        false,
    );
    let sq: Vec<f64> = (0..m).map(|i| g.get(i, i)).collect();
    Matrix::from_fn(m, m, |i, j| {
        if i == j {
            0.0
        } else {
            (sq[i] + sq[j] - 2.0 * g.get(i, j)).max(0.0)
        }
    })
}

/// The median bandwidth from a precomputed m×m squared-distance matrix (see
/// [`squared_distances`]).
///
/// h = median(D)² · f(m) + eps with D = sqrt of `sq`, all m² entries (the zero diagonal
/// included), the median of an even count being the mean of the two middle values, and
/// eps = 2.2e-16 (`f64::EPSILON`). h = 1 when m ≤ 1.
pub fn bandwidth_from_squared_distances(sq: &Matrix, factor: BandwidthFactor) -> f64 {
    let m = sq.rows();
    if m <= 1 {
        return 1.0;
    }
    let mut d: Vec<f64> = sq.as_slice().iter().map(|v| v.sqrt()).collect();
    let n = d.len();
    // the middle value(s) by selection (linear time; a full sort took ~10 % of an SVGD step at
    // m = 256): in the total order every rank holds one bit pattern, so these are the values
    // a sort would put there
    let (below, &mut upper, _) = d.select_nth_unstable_by(n / 2, f64::total_cmp);
    let median = if n % 2 == 1 {
        upper
    } else {
        let lower = below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .unwrap_or(upper);
        0.5 * (lower + upper)
    };
    median * median * factor.value(m) + f64::EPSILON
}

/// The median bandwidth of particles X (m×p, docs/algorithms.md §3): h = median(D)² · f(m) + eps.
///
/// D is the full m×m Euclidean distance matrix, zero diagonal included, computed as
/// sqrt(max(‖a‖² + ‖b‖² − 2aᵀb, 0)); eps = 2.2e-16; h = 1 when m = 1. h is a constant for
/// differentiation.
///
/// # Errors
/// [`Error::Shape`] when m = 0; [`Error::InvalidSettings`] for an invalid `factor`.
pub fn median_bandwidth(particles: &Matrix, factor: BandwidthFactor) -> Result<f64> {
    factor.validate()?;
    if particles.rows() == 0 {
        return Err(Error::shape(
            "median bandwidth",
            "at least one particle",
            "0 particles",
        ));
    }
    Ok(bandwidth_from_squared_distances(
        &squared_distances(particles),
        factor,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::x4;

    #[test]
    fn spec_test_vector() {
        let h = median_bandwidth(&x4(), BandwidthFactor::InverseLog).unwrap();
        assert!((h - 16.92703711).abs() < 1e-7, "{h}");
    }

    #[test]
    fn single_particle_and_factors() {
        let one = Matrix::from_rows(&[vec![3.0, 4.0]]).unwrap();
        assert_eq!(
            median_bandwidth(&one, BandwidthFactor::InverseLog).unwrap(),
            1.0
        );
        // m = 3 on a line: distances 0,0,0,1,1,1,1,2,2 → median 1 (odd count).
        let x = Matrix::from_rows(&[vec![0.0], vec![1.0], vec![2.0]]).unwrap();
        let h = median_bandwidth(&x, BandwidthFactor::Constant(2.0)).unwrap();
        assert!((h - 2.0).abs() < 1e-12);
        let h = median_bandwidth(&x, BandwidthFactor::InverseLogPlusOne).unwrap();
        assert!((h - 1.0 / 4f64.ln()).abs() < 1e-12);
        // m = 2: distances 0,0,3,3 → median (0 + 3)/2 = 1.5 (even count).
        let x = Matrix::from_rows(&[vec![0.0], vec![3.0]]).unwrap();
        let h = median_bandwidth(&x, BandwidthFactor::InverseLog).unwrap();
        assert!((h - 2.25 / 2f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn selected_median_is_the_sorted_one_bit_for_bit() {
        // the median by a full sort, as before the selection
        let sorted = |sq: &Matrix| {
            let mut d: Vec<f64> = sq.as_slice().iter().map(|v| v.sqrt()).collect();
            d.sort_unstable_by(f64::total_cmp);
            let n = d.len();
            let med = if n % 2 == 1 {
                d[n / 2]
            } else {
                0.5 * (d[n / 2 - 1] + d[n / 2])
            };
            med * med * BandwidthFactor::InverseLog.value(sq.rows()) + f64::EPSILON
        };
        // odd and even counts, many ties (few distinct values) and all-distinct values
        for m in [2, 3, 4, 5, 8, 13, 40] {
            for distinct in [3, 1_000_003] {
                let sq = Matrix::from_fn(m, m, |i, j| {
                    let (a, b) = (i.min(j), i.max(j));
                    if a == b {
                        0.0
                    } else {
                        ((a * 7919 + b * 104_729) % distinct) as f64 * 0.37
                    }
                });
                let got = bandwidth_from_squared_distances(&sq, BandwidthFactor::InverseLog);
                assert_eq!(got.to_bits(), sorted(&sq).to_bits(), "m = {m}");
            }
        }
    }

    #[test]
    fn errors() {
        assert!(matches!(
            median_bandwidth(&Matrix::zeros(0, 2), BandwidthFactor::InverseLog),
            Err(Error::Shape { .. })
        ));
        assert!(matches!(
            median_bandwidth(&x4(), BandwidthFactor::Constant(f64::NAN)),
            Err(Error::InvalidSettings { .. })
        ));
    }

    #[test]
    fn squared_distances_match_direct() {
        let x = x4();
        let sq = squared_distances(&x);
        for i in 0..4 {
            for j in 0..4 {
                let want: f64 = x
                    .row(i)
                    .iter()
                    .zip(x.row(j))
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum();
                assert!((sq.get(i, j) - want).abs() < 1e-10);
            }
        }
    }
}
