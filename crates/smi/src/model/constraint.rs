//! The support a model declares for a block of parameters, and Stan's bijections from the
//! unconstrained space to it: the value, the log-Jacobian and the pull-back of gradients.
//!
//! A block of a [`crate::Layout`] holds `n` unconstrained values u ∈ ℝⁿ in θ and stands for
//! `K` constrained values x = T(u) (K = n for every constraint but [`Constraint::Simplex`],
//! where K = n + 1). The transforms are those of the Stan reference manual ("Constraint
//! transforms"), so draws, log-Jacobians and unconstrained positions agree with Stan's.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::transform::{log_sigmoid, sigmoid};

/// Largest |Σx − 1| a simplex may have in [`Constraint::inverse`] (Stan's
/// `CONSTRAINT_TOLERANCE`).
pub const SIMPLEX_TOLERANCE: f64 = 1e-8;

/// The support of a block of parameters and its bijection T: ℝⁿ → support.
///
/// Serialised as `{"kind": "real"}`, `{"kind": "bounded", "lower": 0.0, "upper": 1.0}`, ….
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Constraint {
    /// x = u, any real (the default).
    #[default]
    Real,
    /// x = exp(u) > 0, elementwise; log|J| = Σ u.
    Positive,
    /// x = lower + (upper − lower)·σ(u) ∈ (lower, upper), elementwise (σ the logistic
    /// function); log|J| = Σ [ln(upper − lower) + ln σ(u) + ln σ(−u)]. The bounds are finite
    /// with lower < upper.
    Bounded {
        /// The lower bound a.
        lower: f64,
        /// The upper bound b > a.
        upper: f64,
    },
    /// A strictly increasing vector (1-D block): x₁ = u₁, x_k = x_{k−1} + exp(u_k);
    /// log|J| = Σ_{k≥2} u_k.
    Ordered,
    /// A point of the simplex {x ∈ (0, 1)ᴷ : Σx = 1} (1-D block of K ≥ 1 constrained values
    /// from K − 1 unconstrained ones), by Stan's stick-breaking transform: for k = 1..K−1,
    /// z_k = σ(u_k − ln(K − k)), x_k = s_k·z_k with s₁ = 1 and s_{k+1} = s_k − x_k, and
    /// x_K = s_K; log|J| = Σ_k [ln s_k + ln z_k + ln(1 − z_k)]. u = 0 maps to the centre
    /// x = (1/K, …, 1/K).
    Simplex,
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Constraint::Real => f.write_str("real"),
            Constraint::Positive => f.write_str("positive"),
            Constraint::Bounded { lower, upper } => write!(f, "bounded ({lower}, {upper})"),
            Constraint::Ordered => f.write_str("ordered"),
            Constraint::Simplex => f.write_str("simplex"),
        }
    }
}

impl Constraint {
    /// Whether this is [`Constraint::Real`] (the identity).
    pub fn is_real(&self) -> bool {
        matches!(self, Constraint::Real)
    }

    /// Checks the constraint for a block of constrained `shape` (row-major; `[]` is a scalar).
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (`constraint`) for bounds that are not finite with
    /// lower < upper (and upper − lower finite), an ordered or simplex block that is not 1-D,
    /// or an empty simplex.
    pub fn validate(&self, shape: &[usize]) -> Result<()> {
        match *self {
            Constraint::Bounded { lower, upper } => {
                if !(lower.is_finite() && upper.is_finite() && (upper - lower).is_finite())
                    || lower >= upper
                {
                    return Err(Error::invalid(
                        "constraint",
                        format!("bounds must be finite with lower < upper, got ({lower}, {upper})"),
                    ));
                }
            }
            Constraint::Ordered | Constraint::Simplex => {
                if shape.len() != 1 {
                    return Err(Error::invalid(
                        "constraint",
                        format!("{self} applies to a vector (1-D shape), got shape {shape:?}"),
                    ));
                }
                if *self == Constraint::Simplex && shape[0] == 0 {
                    return Err(Error::invalid(
                        "constraint",
                        "a simplex needs at least one element",
                    ));
                }
            }
            Constraint::Real | Constraint::Positive => {}
        }
        Ok(())
    }

    /// The number of constrained values K of a block of `unconstrained_len` values n: n + 1 for
    /// a simplex, n otherwise.
    pub fn constrained_len(&self, unconstrained_len: usize) -> usize {
        match self {
            Constraint::Simplex => unconstrained_len + 1,
            _ => unconstrained_len,
        }
    }

    /// The number of unconstrained values n of a block of `constrained_len` values K: K − 1 for
    /// a simplex (0 for K = 0, which [`Constraint::validate`] rejects), K otherwise.
    pub fn unconstrained_len(&self, constrained_len: usize) -> usize {
        match self {
            Constraint::Simplex => constrained_len.saturating_sub(1),
            _ => constrained_len,
        }
    }

    /// Checks that `x.len()` is the constrained length of `u.len()` unconstrained values.
    fn check_lengths(&self, u: usize, x: usize) -> Result<()> {
        if self.constrained_len(u) == x {
            Ok(())
        } else {
            Err(Error::shape(
                format!("{self} constraint"),
                format!(
                    "{} constrained values for {u} unconstrained",
                    self.constrained_len(u)
                ),
                x,
            ))
        }
    }

    /// x = T(u): writes the constrained values of the unconstrained `u` (length n) into `x`
    /// (length [`Constraint::constrained_len`]`(n)`).
    ///
    /// # Errors
    /// [`Error::Shape`] when the lengths disagree.
    pub fn forward(&self, u: &[f64], x: &mut [f64]) -> Result<()> {
        self.check_lengths(u.len(), x.len())?;
        match *self {
            Constraint::Real => x.copy_from_slice(u),
            Constraint::Positive => x.iter_mut().zip(u).for_each(|(x, u)| *x = u.exp()),
            Constraint::Bounded { lower, upper } => {
                for (x, &u) in x.iter_mut().zip(u) {
                    *x = lower + (upper - lower) * sigmoid(u);
                }
            }
            Constraint::Ordered => {
                let mut prev = 0.0;
                for (k, (x, &u)) in x.iter_mut().zip(u).enumerate() {
                    *x = if k == 0 { u } else { prev + u.exp() };
                    prev = *x;
                }
            }
            Constraint::Simplex => {
                let n = u.len();
                let mut stick = 1.0;
                for k in 0..n {
                    let a = u[k] - ((n - k) as f64).ln();
                    x[k] = stick * sigmoid(a);
                    stick *= sigmoid(-a);
                }
                x[n] = stick;
            }
        }
        Ok(())
    }

    /// u = T⁻¹(x): writes the unconstrained values of the constrained `x` into `u`.
    ///
    /// # Errors
    /// [`Error::Shape`] when the lengths disagree; [`Error::Data`] when `x` is outside the
    /// open support (not finite, not positive, not strictly inside the bounds, not strictly
    /// increasing, or not a simplex with positive entries summing to 1 within
    /// [`SIMPLEX_TOLERANCE`]).
    pub fn inverse(&self, x: &[f64], u: &mut [f64]) -> Result<()> {
        self.check_lengths(u.len(), x.len())?;
        self.inverse_values(x, u).map_err(Error::Data)
    }

    /// [`Constraint::inverse`] on slices of matching lengths; the error is the reason.
    pub(crate) fn inverse_values(
        &self,
        x: &[f64],
        u: &mut [f64],
    ) -> std::result::Result<(), String> {
        if let Some((i, v)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(format!("value {v} at index {i} is not finite"));
        }
        let outside = |i: usize, v: f64| {
            Err(format!(
                "value {v} at index {i} is outside the support of {self}"
            ))
        };
        match *self {
            Constraint::Real => u.copy_from_slice(x),
            Constraint::Positive => {
                for (i, (u, &x)) in u.iter_mut().zip(x).enumerate() {
                    if x <= 0.0 {
                        return outside(i, x);
                    }
                    *u = x.ln();
                }
            }
            Constraint::Bounded { lower, upper } => {
                for (i, (u, &x)) in u.iter_mut().zip(x).enumerate() {
                    if x <= lower || x >= upper {
                        return outside(i, x);
                    }
                    *u = ((x - lower) / (upper - x)).ln();
                }
            }
            Constraint::Ordered => {
                for k in 0..x.len() {
                    u[k] = if k == 0 {
                        x[0]
                    } else if x[k] > x[k - 1] {
                        (x[k] - x[k - 1]).ln()
                    } else {
                        return Err(format!(
                            "values {} and {} at indices {} and {k} are not strictly increasing",
                            x[k - 1],
                            x[k],
                            k - 1
                        ));
                    };
                }
            }
            Constraint::Simplex => {
                if let Some((i, &v)) = x.iter().enumerate().find(|(_, v)| **v <= 0.0) {
                    return outside(i, v);
                }
                let sum: f64 = x.iter().sum();
                if (sum - 1.0).abs() > SIMPLEX_TOLERANCE {
                    return Err(format!("the values sum to {sum}, not 1"));
                }
                // Stan's `simplex_free`: the stick behind x_k, summed from the end.
                let n = u.len();
                let mut rest = x[n];
                for k in (0..n).rev() {
                    u[k] = x[k].ln() - rest.ln() + ((n - k) as f64).ln();
                    rest += x[k];
                }
            }
        }
        Ok(())
    }

    /// log|det ∂x/∂u| at the unconstrained `u` (a block's whole vector; 0 for
    /// [`Constraint::Real`]).
    pub fn log_abs_det_jacobian(&self, u: &[f64]) -> f64 {
        match *self {
            Constraint::Real => 0.0,
            Constraint::Positive => u.iter().sum(),
            Constraint::Bounded { lower, upper } => u
                .iter()
                .map(|&u| (upper - lower).ln() + log_sigmoid(u) + log_sigmoid(-u))
                .sum(),
            Constraint::Ordered => u.iter().skip(1).sum(),
            Constraint::Simplex => {
                let n = u.len();
                let mut stick: f64 = 1.0;
                let mut lj = 0.0;
                for (k, &u) in u.iter().enumerate() {
                    let a = u - ((n - k) as f64).ln();
                    lj += stick.ln() + log_sigmoid(a) + log_sigmoid(-a);
                    stick *= sigmoid(-a);
                }
                lj
            }
        }
    }

    /// The pull-back of a gradient: **adds** Jᵀ `grad_x` into `grad_u` (J = ∂x/∂u at `u`), plus
    /// ∇_u log|det J| when `jacobian` is set, and returns log|det J| when `jacobian` is set
    /// (0 otherwise). So if f(x) has gradient `grad_x`, `grad_u` receives the gradient of
    /// f(T(u)) [+ log|det J(u)|].
    ///
    /// # Errors
    /// [`Error::Shape`] unless `grad_x` has the constrained length of `u` and `grad_u` the
    /// length of `u`.
    pub fn pull_back(
        &self,
        u: &[f64],
        grad_x: &[f64],
        jacobian: bool,
        grad_u: &mut [f64],
    ) -> Result<f64> {
        self.check_lengths(u.len(), grad_x.len())?;
        if grad_u.len() != u.len() {
            return Err(Error::shape(
                format!("{self} constraint: grad_u"),
                u.len(),
                grad_u.len(),
            ));
        }
        Ok(self.pull_back_values(u, Some(grad_x), jacobian, grad_u))
    }

    /// [`Constraint::pull_back`] on slices of matching lengths; `grad_x = None` means a zero
    /// gradient (only the log-Jacobian's gradient is added).
    pub(crate) fn pull_back_values(
        &self,
        u: &[f64],
        grad_x: Option<&[f64]>,
        jacobian: bool,
        grad_u: &mut [f64],
    ) -> f64 {
        let gx = |k: usize| grad_x.map_or(0.0, |g| g[k]);
        let jac = if jacobian { 1.0 } else { 0.0 };
        match *self {
            Constraint::Real => {
                for (k, g) in grad_u.iter_mut().enumerate() {
                    *g += gx(k);
                }
            }
            Constraint::Positive => {
                for (k, (g, &u)) in grad_u.iter_mut().zip(u).enumerate() {
                    *g += gx(k) * u.exp() + jac;
                }
            }
            Constraint::Bounded { lower, upper } => {
                for (k, (g, &u)) in grad_u.iter_mut().zip(u).enumerate() {
                    let (s, t) = (sigmoid(u), sigmoid(-u));
                    // dx/du = (b − a) σ(u) σ(−u); d/du [ln σ(u) + ln σ(−u)] = σ(−u) − σ(u).
                    *g += gx(k) * (upper - lower) * s * t + jac * (t - s);
                }
            }
            Constraint::Ordered => {
                // ∂x_j/∂u_1 = 1 and ∂x_j/∂u_k = exp(u_k) for j ≥ k ≥ 2: suffix sums of grad_x.
                let mut suffix = 0.0;
                for k in (0..u.len()).rev() {
                    suffix += gx(k);
                    grad_u[k] += if k == 0 {
                        suffix
                    } else {
                        suffix * u[k].exp() + jac
                    };
                }
            }
            Constraint::Simplex => self.simplex_pull_back(u, &gx, jac, grad_u),
        }
        if jacobian {
            self.log_abs_det_jacobian(u)
        } else {
            0.0
        }
    }

    /// Reverse-mode pass through the stick-breaking recursion (see [`Constraint::Simplex`]):
    /// with s_{k+1} = s_k (1 − z_k) and x_k = s_k z_k, the adjoint a of s_{k+1} gives
    /// ∂/∂u_k = s_k (g_k − a) z_k (1 − z_k) + jac (1 − 2 z_k) and the adjoint of s_k is
    /// g_k z_k + a (1 − z_k) + jac / s_k.
    fn simplex_pull_back(
        &self,
        u: &[f64],
        gx: &dyn Fn(usize) -> f64,
        jac: f64,
        grad_u: &mut [f64],
    ) {
        let n = u.len();
        let mut z = Vec::with_capacity(n);
        let mut stick = Vec::with_capacity(n);
        let mut s = 1.0;
        for (k, &u) in u.iter().enumerate() {
            let a = u - ((n - k) as f64).ln();
            z.push(sigmoid(a));
            stick.push(s);
            s *= sigmoid(-a);
        }
        let mut adj = gx(n);
        for k in (0..n).rev() {
            let (zk, sk) = (z[k], stick[k]);
            grad_u[k] += sk * (gx(k) - adj) * zk * (1.0 - zk) + jac * (1.0 - 2.0 * zk);
            adj = gx(k) * zk + adj * (1.0 - zk) + jac / sk;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all() -> Vec<Constraint> {
        vec![
            Constraint::Real,
            Constraint::Positive,
            Constraint::Bounded {
                lower: -1.5,
                upper: 4.0,
            },
            Constraint::Ordered,
            Constraint::Simplex,
        ]
    }

    /// f(x) = Σ w_k x_k² / 2 + sin(x_k): a test function with a non-trivial gradient.
    fn f(x: &[f64]) -> (f64, Vec<f64>) {
        let w = |k: usize| 0.3 + 0.2 * k as f64;
        let v = x
            .iter()
            .enumerate()
            .map(|(k, x)| 0.5 * w(k) * x * x + x.sin())
            .sum();
        let g = x
            .iter()
            .enumerate()
            .map(|(k, x)| w(k) * x + x.cos())
            .collect();
        (v, g)
    }

    /// f(T(u)) [+ log|J|] at u.
    fn composed(c: Constraint, u: &[f64], jacobian: bool) -> f64 {
        let mut x = vec![0.0; c.constrained_len(u.len())];
        c.forward(u, &mut x).unwrap();
        f(&x).0
            + if jacobian {
                c.log_abs_det_jacobian(u)
            } else {
                0.0
            }
    }

    #[test]
    fn pull_back_matches_finite_differences() {
        // Central differences with h = 1e-6 on O(1) functions: truncation ≈ h²·|f‴| ≈ 1e-12,
        // rounding ≈ 1e-16/h ≈ 1e-10; 1e-7 leaves a wide margin and still catches any
        // wrong term (those are O(0.1) or more here).
        let u = [0.4, -1.1, 0.9, 0.2];
        let h = 1e-6;
        for c in all() {
            for jacobian in [false, true] {
                let mut x = vec![0.0; c.constrained_len(u.len())];
                c.forward(&u, &mut x).unwrap();
                let (_, gx) = f(&x);
                let mut gu = vec![0.0; u.len()];
                let lj = c.pull_back(&u, &gx, jacobian, &mut gu).unwrap();
                let expect_lj = if jacobian {
                    c.log_abs_det_jacobian(&u)
                } else {
                    0.0
                };
                assert_eq!(lj, expect_lj);
                for k in 0..u.len() {
                    let (mut up, mut dn) = (u, u);
                    up[k] += h;
                    dn[k] -= h;
                    let fd = (composed(c, &up, jacobian) - composed(c, &dn, jacobian)) / (2.0 * h);
                    assert!(
                        (fd - gu[k]).abs() < 1e-7,
                        "{c} jacobian {jacobian} coordinate {k}: fd {fd} vs {}",
                        gu[k]
                    );
                }
            }
        }
    }

    /// The Jacobian matrix ∂x/∂u by central differences, K × n.
    fn jacobian_fd(c: Constraint, u: &[f64]) -> Vec<Vec<f64>> {
        let h = 1e-6;
        let kx = c.constrained_len(u.len());
        let mut cols = Vec::new();
        for j in 0..u.len() {
            let (mut up, mut dn) = (u.to_vec(), u.to_vec());
            up[j] += h;
            dn[j] -= h;
            let (mut xu, mut xd) = (vec![0.0; kx], vec![0.0; kx]);
            c.forward(&up, &mut xu).unwrap();
            c.forward(&dn, &mut xd).unwrap();
            cols.push(
                (0..kx)
                    .map(|i| (xu[i] - xd[i]) / (2.0 * h))
                    .collect::<Vec<f64>>(),
            );
        }
        (0..kx)
            .map(|i| cols.iter().map(|c| c[i]).collect())
            .collect()
    }

    /// ln|det| of a square matrix by Gaussian elimination with partial pivoting.
    fn log_abs_det(mut a: Vec<Vec<f64>>) -> f64 {
        let n = a.len();
        let mut out = 0.0;
        for c in 0..n {
            let p = (c..n)
                .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
                .unwrap();
            a.swap(c, p);
            out += a[c][c].abs().ln();
            let (top, rest) = a.split_at_mut(c + 1);
            let pivot = &top[c];
            for row in rest {
                let m = row[c] / pivot[c];
                row.iter_mut()
                    .zip(pivot)
                    .skip(c)
                    .for_each(|(v, p)| *v -= m * p);
            }
        }
        out
    }

    #[test]
    fn log_abs_det_jacobian_matches_the_finite_difference_jacobian() {
        // The simplex's Jacobian is K × (K − 1); its density on the simplex uses the first
        // K − 1 coordinates (x_K = 1 − Σ the others), so the determinant is of that square
        // block. Entries of the FD Jacobian are accurate to ≈ 1e-10, so ln|det| to ≈ 1e-8.
        let u = [0.4, -1.1, 0.9, 0.2];
        for c in all() {
            let mut jac = jacobian_fd(c, &u);
            jac.truncate(u.len());
            let fd = log_abs_det(jac);
            let lj = c.log_abs_det_jacobian(&u);
            assert!((fd - lj).abs() < 1e-7, "{c}: fd {fd} vs {lj}");
        }
    }

    #[test]
    fn values_lie_in_the_support_and_known_points_map_as_stan() {
        let mut x = vec![0.0; 4];
        Constraint::Simplex.forward(&[0.0; 3], &mut x).unwrap();
        // Stan's offsets ln(K − k) put u = 0 at the centre of the simplex.
        assert!(x.iter().all(|v| (v - 0.25).abs() < 1e-15), "{x:?}");
        Constraint::Ordered
            .forward(&[1.0, 0.0, 2f64.ln(), -30.0], &mut x)
            .unwrap();
        assert_eq!(&x[..3], &[1.0, 2.0, 4.0]);
        assert!(x[3] > x[2]);
        let b = Constraint::Bounded {
            lower: 2.0,
            upper: 6.0,
        };
        b.forward(&[0.0, 50.0, -50.0, 1.0], &mut x).unwrap();
        assert_eq!(x[0], 4.0);
        assert!(x.iter().all(|&v| (2.0..=6.0).contains(&v)));
        let mut one = [0.0];
        Constraint::Simplex.forward(&[], &mut one).unwrap();
        assert_eq!(one, [1.0]);
        assert_eq!(Constraint::Simplex.log_abs_det_jacobian(&[]), 0.0);
    }

    #[test]
    fn values_outside_the_support_are_errors() {
        let mut u = [0.0; 3];
        let bad: [(Constraint, [f64; 3]); 7] = [
            (Constraint::Real, [0.0, f64::NAN, 1.0]),
            (Constraint::Positive, [1.0, 0.0, 2.0]),
            (
                Constraint::Bounded {
                    lower: 0.0,
                    upper: 1.0,
                },
                [0.5, 1.0, 0.2],
            ),
            (Constraint::Ordered, [1.0, 2.0, 2.0]),
            (Constraint::Ordered, [1.0, 0.0, 2.0]),
            (Constraint::Simplex, [0.5, 0.6, 0.0]),
            (Constraint::Simplex, [0.5, 0.4, 0.2]),
        ];
        for (c, x) in bad {
            let x = &x[..c.constrained_len(c.unconstrained_len(3))];
            let u = &mut u[..c.unconstrained_len(3)];
            let e = c.inverse(x, u).unwrap_err();
            assert!(matches!(e, Error::Data(_)), "{c} {x:?}: {e}");
        }
        let e = Constraint::Simplex
            .inverse(&[0.5, 0.5], &mut [0.0; 2])
            .unwrap_err();
        assert!(matches!(e, Error::Shape { .. }), "{e}");
        assert!(Constraint::Simplex.validate(&[2, 2]).is_err());
        assert!(Constraint::Simplex.validate(&[0]).is_err());
        assert!(Constraint::Ordered.validate(&[]).is_err());
        assert!(Constraint::Bounded {
            lower: 1.0,
            upper: 1.0
        }
        .validate(&[3])
        .is_err());
        assert!(Constraint::Bounded {
            lower: 0.0,
            upper: f64::INFINITY
        }
        .validate(&[3])
        .is_err());
        assert!(Constraint::Positive.validate(&[2, 3]).is_ok());
    }

    #[test]
    fn serde_form_is_tagged() {
        let b = Constraint::Bounded {
            lower: 0.0,
            upper: 1.0,
        };
        let s = serde_json::to_string(&b).unwrap();
        assert_eq!(s, r#"{"kind":"bounded","lower":0.0,"upper":1.0}"#);
        assert_eq!(serde_json::from_str::<Constraint>(&s).unwrap(), b);
        assert_eq!(
            serde_json::from_str::<Constraint>(r#"{"kind":"simplex"}"#).unwrap(),
            Constraint::Simplex
        );
    }

    proptest! {
        // Round trips u → x → u: the transforms are smooth with bounded condition on |u| ≤ 8,
        // so 1e-8 absolute is loose for exp/ln and logistic/logit chains (errors ≈ 1e-13·e⁸).
        #[test]
        fn inverse_round_trips(u in prop::collection::vec(-8.0f64..8.0, 1..6), which in 0usize..5) {
            let c = all()[which];
            let mut x = vec![0.0; c.constrained_len(u.len())];
            c.forward(&u, &mut x).unwrap();
            let mut back = vec![0.0; u.len()];
            c.inverse(&x, &mut back).unwrap();
            for (a, b) in u.iter().zip(&back) {
                prop_assert!((a - b).abs() < 1e-8, "{c}: {u:?} → {x:?} → {back:?}");
            }
        }
    }
}
