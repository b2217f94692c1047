//! Bijections from the unconstrained real line to a constrained support, with the pieces a model
//! needs to work on unconstrained θ: the value, log|T′(u)| and its derivative.
//!
//! A model with a positive latent (e.g. a Gamma precision) samples u ∈ ℝ, uses x = T(u) and adds
//! `log_abs_det_jacobian(u)` to its log density when [`crate::Batch::jacobian`] is set.
//!
//! These are the scalar building blocks of the built-in models. To declare a block's support
//! (so summaries and draws come out constrained, by name) use [`crate::Constraint`] in the
//! model's [`crate::Layout`]: [`Transform::Exp`] is [`crate::Constraint::Positive`] for one
//! value, and [`crate::Constrained`] applies the transforms for a model written on the
//! constrained values.

use serde::{Deserialize, Serialize};

/// A scalar bijection ℝ → support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transform {
    /// x = u.
    Identity,
    /// x = exp(u) (positive support; NumPyro's `biject_to(positive)`).
    Exp,
    /// x = softplus(u) = ln(1 + eᵘ) (NumPyro's `softplus_positive`).
    Softplus,
}

impl Transform {
    /// x = T(u).
    pub fn forward(self, u: f64) -> f64 {
        match self {
            Transform::Identity => u,
            Transform::Exp => u.exp(),
            Transform::Softplus => softplus(u),
        }
    }

    /// u = T⁻¹(x).
    pub fn inverse(self, x: f64) -> f64 {
        match self {
            Transform::Identity => x,
            Transform::Exp => x.ln(),
            Transform::Softplus => inv_softplus(x),
        }
    }

    /// dx/du.
    pub fn derivative(self, u: f64) -> f64 {
        match self {
            Transform::Identity => 1.0,
            Transform::Exp => u.exp(),
            Transform::Softplus => sigmoid(u),
        }
    }

    /// log|dx/du|.
    pub fn log_abs_det_jacobian(self, u: f64) -> f64 {
        match self {
            Transform::Identity => 0.0,
            Transform::Exp => u,
            Transform::Softplus => log_sigmoid(u),
        }
    }

    /// d/du log|dx/du|.
    pub fn log_abs_det_jacobian_grad(self, u: f64) -> f64 {
        match self {
            Transform::Identity => 0.0,
            Transform::Exp => 1.0,
            // d/du log σ(u) = 1 − σ(u) = σ(−u)
            Transform::Softplus => sigmoid(-u),
        }
    }
}

/// softplus(u) = ln(1 + eᵘ), computed without overflow.
pub fn softplus(u: f64) -> f64 {
    if u > 0.0 {
        u + (-u).exp().ln_1p()
    } else {
        u.exp().ln_1p()
    }
}

/// The inverse of softplus: ln(eˣ − 1) for x > 0.
pub fn inv_softplus(x: f64) -> f64 {
    if x > 30.0 {
        x + (-(-x).exp()).ln_1p()
    } else {
        x.exp_m1().ln()
    }
}

/// The logistic sigmoid 1/(1 + e⁻ᵘ), the derivative of softplus.
pub fn sigmoid(u: f64) -> f64 {
    if u >= 0.0 {
        1.0 / (1.0 + (-u).exp())
    } else {
        let e = u.exp();
        e / (1.0 + e)
    }
}

/// (softplus(u), sigmoid(u)) from one exponential, e^(−|u|), which both use: the same bits as
/// [`softplus`] and [`sigmoid`] called apart.
#[inline]
pub(crate) fn softplus_and_sigmoid(u: f64) -> (f64, f64) {
    let e = (-u.abs()).exp();
    let log1p = e.ln_1p();
    if u > 0.0 {
        (u + log1p, 1.0 / (1.0 + e))
    } else if u == 0.0 {
        (log1p, 1.0 / (1.0 + e))
    } else {
        (log1p, e / (1.0 + e))
    }
}

/// ln σ(u) = −softplus(−u).
pub fn log_sigmoid(u: f64) -> f64 {
    -softplus(-u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softplus_and_sigmoid_are_the_two_calls_bit_for_bit() {
        // both signs, zero, −0, tiny, large and extreme arguments, NaN
        let (sp, sg) = softplus_and_sigmoid(f64::NAN);
        assert!(sp.is_nan() && sg.is_nan());
        let mut us = vec![0.0, -0.0, 1e-300, -1e-300, 40.0, -40.0, 800.0, -800.0];
        us.extend((0..4000).map(|i| (i as f64 - 2000.0) * 0.0137));
        for u in us {
            let (sp, sg) = softplus_and_sigmoid(u);
            assert_eq!(sp.to_bits(), softplus(u).to_bits(), "softplus({u})");
            assert_eq!(sg.to_bits(), sigmoid(u).to_bits(), "sigmoid({u})");
        }
    }

    #[test]
    fn inverse_round_trips_and_derivatives_match_finite_differences() {
        for t in [Transform::Identity, Transform::Exp, Transform::Softplus] {
            for &u in &[-5.0, -0.3, 0.0, 0.7, 4.0] {
                let x = t.forward(u);
                assert!((t.inverse(x) - u).abs() < 1e-10, "{t:?} {u}");
                let h = 1e-6;
                let fd = (t.forward(u + h) - t.forward(u - h)) / (2.0 * h);
                assert!((fd - t.derivative(u)).abs() < 1e-7);
                assert!((t.derivative(u).ln() - t.log_abs_det_jacobian(u)).abs() < 1e-12);
                let fdj =
                    (t.log_abs_det_jacobian(u + h) - t.log_abs_det_jacobian(u - h)) / (2.0 * h);
                assert!((fdj - t.log_abs_det_jacobian_grad(u)).abs() < 1e-7);
            }
        }
    }

    #[test]
    fn softplus_is_stable() {
        assert_eq!(softplus(1000.0), 1000.0);
        assert!(softplus(-1000.0) >= 0.0);
        assert!((inv_softplus(0.1) - (-2.252_168_461_044_09)).abs() < 1e-12);
    }
}
