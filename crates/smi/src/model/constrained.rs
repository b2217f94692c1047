//! Models written on the constrained space: implement [`ConstrainedModel`] (a layout that
//! declares each block's [`crate::Constraint`], a prior and a likelihood of the constrained
//! values x) and wrap it in [`Constrained`], which is a [`PerDraw`] (hence a
//! [`crate::LogDensity`]) on unconstrained θ: it maps θ to x = T(θ), calls the model, pulls
//! the gradient back to θ and adds log|det J| when [`crate::Batch::jacobian`] is set.

use rand::RngCore;

use crate::error::{Error, Result};
use crate::model::{Layout, PerDraw};

/// A model evaluated one draw at a time on its **constrained** parameters x (length
/// [`Layout::constrained_dim`], in the layout's block order); wrap it in [`Constrained`] to
/// fit it.
///
/// The log density of x is the model's own: no Jacobian term (the wrapper adds it).
///
/// ```
/// use smi::{Batch, Constrained, ConstrainedModel, Constraint, Layout, LogDensity};
///
/// /// σ ~ Exponential(1), a positive scale with no data.
/// struct Scale;
///
/// impl ConstrainedModel for Scale {
///     fn layout(&self) -> Layout {
///         let mut l = Layout::default();
///         l.push_constrained("sigma", vec![], Constraint::Positive).expect("valid");
///         l
///     }
///     fn log_prior(&self, x: &[f64], g: &mut [f64]) -> smi::Result<f64> {
///         g[0] += -1.0;
///         Ok(-x[0])
///     }
/// }
///
/// let model = Constrained::new(Scale)?;
/// let (mut lp, mut g) = (vec![0.0], vec![0.0]);
/// // θ = ln σ = 0: log p(σ = 1) + ln σ = −1, gradient −σ + 1 = 0.
/// model.log_density_and_grad(&[0.0], &Batch::full(), &mut lp, &mut g)?;
/// assert_eq!((lp[0], g[0]), (-1.0, 0.0));
/// # Ok::<(), smi::Error>(())
/// ```
pub trait ConstrainedModel: Send + Sync {
    /// The blocks of the parameters with their constraints ([`Layout::push_constrained`]);
    /// θ has [`Layout::dim`] columns, x has [`Layout::constrained_dim`].
    fn layout(&self) -> Layout;

    /// N, the data rows the likelihood sums over (0, the default, for a model without data).
    fn num_data(&self) -> usize {
        0
    }

    /// log p(x) of the prior for one draw of constrained values `x`; **adds** ∇ₓ of it into
    /// `grad_x` (same length, zeroed before).
    ///
    /// # Errors
    /// Model-specific.
    fn log_prior(&self, x: &[f64], grad_x: &mut [f64]) -> Result<f64>;

    /// `scale` × Σ_{i ∈ rows} log p(y_i | x) for one draw, **adding** `scale` × its gradient
    /// with respect to x into `grad_x`. The default (a model without data) is 0.
    ///
    /// # Errors
    /// Model-specific.
    fn log_likelihood(
        &self,
        _x: &[f64],
        _rows: &[usize],
        _scale: f64,
        _grad_x: &mut [f64],
    ) -> Result<f64> {
        Ok(0.0)
    }

    /// One draw from the prior of the constrained values, written into `x` (length
    /// [`Layout::constrained_dim`]); [`Constrained`] maps it to θ.
    ///
    /// # Errors
    /// [`Error::Unsupported`] by default.
    fn sample_prior(&self, _rng: &mut dyn RngCore, _x: &mut [f64]) -> Result<()> {
        Err(Error::Unsupported(
            "this model cannot sample its prior; use a uniform initialisation".into(),
        ))
    }
}

/// A [`ConstrainedModel`] seen on unconstrained θ: a [`PerDraw`], hence a
/// [`crate::LogDensity`] any engine fits, whose [`crate::LogDensity::layout`] is the model's
/// (so summaries and draws come back in the constrained space by name).
///
/// For θ (length d) it evaluates x = T(θ) with [`Layout::constrain`], the model's log
/// density and gradient at x, and returns log p(T(θ)) [+ log|det J(θ)|] with the gradient
/// Jᵀ∇ₓ log p [+ ∇_θ log|det J|] ([`Layout::pull_back`]); the Jacobian terms are added when
/// [`crate::Batch::jacobian`] is set (every method but MAP and NumPyro-parity SVGD).
#[derive(Clone, Debug)]
pub struct Constrained<M> {
    model: M,
    layout: Layout,
}

impl<M: ConstrainedModel> Constrained<M> {
    /// Wraps `model`, reading its layout once.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (`layout`) when the layout has no unconstrained column.
    pub fn new(model: M) -> Result<Self> {
        let layout = model.layout();
        if layout.dim() == 0 {
            return Err(Error::invalid(
                "layout",
                "the model declares no unconstrained parameter",
            ));
        }
        Ok(Constrained { model, layout })
    }

    /// The wrapped model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The wrapped model, unwrapped.
    pub fn into_inner(self) -> M {
        self.model
    }

    /// Evaluates `f(x, grad_x)` at x = T(θ) and pulls its gradient back into `grad`; adds
    /// log|det J| when `jacobian` is set.
    fn at_constrained(
        &self,
        theta: &[f64],
        jacobian: bool,
        grad: &mut [f64],
        f: impl FnOnce(&[f64], &mut [f64]) -> Result<f64>,
    ) -> Result<f64> {
        let n = self.layout.constrained_dim();
        let (mut x, mut grad_x) = (vec![0.0; n], vec![0.0; n]);
        self.layout.constrain(theta, &mut x)?;
        let value = f(&x, &mut grad_x)?;
        let log_jacobian = self.layout.pull_back(theta, &grad_x, jacobian, grad)?;
        Ok(value + log_jacobian)
    }
}

impl<M: ConstrainedModel> PerDraw for Constrained<M> {
    fn dim(&self) -> usize {
        self.layout.dim()
    }

    fn num_data(&self) -> usize {
        self.model.num_data()
    }

    fn log_prior(&self, theta: &[f64], jacobian: bool, grad: &mut [f64]) -> Result<f64> {
        self.at_constrained(theta, jacobian, grad, |x, g| self.model.log_prior(x, g))
    }

    fn log_likelihood(
        &self,
        theta: &[f64],
        rows: &[usize],
        scale: f64,
        grad: &mut [f64],
    ) -> Result<f64> {
        self.at_constrained(theta, false, grad, |x, g| {
            self.model.log_likelihood(x, rows, scale, g)
        })
    }

    fn layout(&self) -> Layout {
        self.layout.clone()
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        let mut x = vec![0.0; self.layout.constrained_dim()];
        self.model.sample_prior(rng, &mut x)?;
        self.layout.unconstrain(&x, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Batch, Constraint, LogDensity};
    use crate::testing::check_gradient;

    const Y: [f64; 8] = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
    const SIGMA: [f64; 8] = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0];

    /// Eight schools, non-centred, on the constrained space: x = (theta_trans[8], mu, tau).
    struct EightSchools;

    impl ConstrainedModel for EightSchools {
        fn layout(&self) -> Layout {
            let mut l = Layout::default();
            l.push("theta_trans", vec![8]);
            l.push("mu", vec![]);
            l.push_constrained("tau", vec![], Constraint::Positive)
                .unwrap();
            l
        }
        fn num_data(&self) -> usize {
            8
        }
        fn log_prior(&self, x: &[f64], g: &mut [f64]) -> Result<f64> {
            let (mu, tau) = (x[8], x[9]);
            for j in 0..8 {
                g[j] -= x[j];
            }
            g[8] -= mu / 25.0;
            g[9] -= 2.0 * tau / 25.0 / (1.0 + tau * tau / 25.0);
            Ok(-0.5 * x[..8].iter().map(|t| t * t).sum::<f64>()
                - mu * mu / 50.0
                - (1.0 + tau * tau / 25.0).ln())
        }
        fn log_likelihood(
            &self,
            x: &[f64],
            rows: &[usize],
            scale: f64,
            g: &mut [f64],
        ) -> Result<f64> {
            let (mu, tau) = (x[8], x[9]);
            let mut lp = 0.0;
            for &j in rows {
                let z = (Y[j] - mu - tau * x[j]) / SIGMA[j];
                lp -= 0.5 * scale * z * z;
                let r = scale * z / SIGMA[j];
                g[j] += r * tau;
                g[8] += r;
                g[9] += r * x[j];
            }
            Ok(lp)
        }
    }

    /// The same model written by hand on θ = (theta_trans[8], mu, ln tau).
    struct EightSchoolsByHand;

    impl PerDraw for EightSchoolsByHand {
        fn dim(&self) -> usize {
            10
        }
        fn num_data(&self) -> usize {
            8
        }
        fn log_prior(&self, t: &[f64], jacobian: bool, g: &mut [f64]) -> Result<f64> {
            let (mu, s) = (t[8], t[9]);
            let tau = s.exp();
            for j in 0..8 {
                g[j] -= t[j];
            }
            g[8] -= mu / 25.0;
            g[9] -= 2.0 * tau * tau / 25.0 / (1.0 + tau * tau / 25.0);
            let mut lp = -0.5 * t[..8].iter().map(|v| v * v).sum::<f64>()
                - mu * mu / 50.0
                - (1.0 + tau * tau / 25.0).ln();
            if jacobian {
                lp += s;
                g[9] += 1.0;
            }
            Ok(lp)
        }
        fn log_likelihood(
            &self,
            t: &[f64],
            rows: &[usize],
            scale: f64,
            g: &mut [f64],
        ) -> Result<f64> {
            let (mu, tau) = (t[8], t[9].exp());
            let mut lp = 0.0;
            for &j in rows {
                let z = (Y[j] - mu - tau * t[j]) / SIGMA[j];
                lp -= 0.5 * scale * z * z;
                let r = scale * z / SIGMA[j];
                g[j] += r * tau;
                g[8] += r;
                g[9] += r * t[j] * tau;
            }
            Ok(lp)
        }
    }

    #[test]
    fn eight_schools_on_the_constrained_space_equals_the_hand_written_model() {
        let model = Constrained::new(EightSchools).unwrap();
        assert_eq!(LogDensity::dim(&model), 10);
        assert_eq!(
            LogDensity::layout(&model).constrained_names()[7..],
            ["theta_trans[8]", "mu", "tau"]
        );
        // Three draws (K = 3) at once, including a large and a small τ.
        let theta: Vec<f64> = (0..30)
            .map(|i| (i as f64 * 0.37).sin() * if i % 10 == 9 { 3.0 } else { 1.5 })
            .collect();
        let mut batches = vec![Batch::full(), Batch::shared(vec![1, 4, 6], 8)];
        let mut no_jacobian = Batch::full();
        no_jacobian.jacobian = false;
        batches.push(no_jacobian);
        for batch in &batches {
            let (mut lp_a, mut g_a) = (vec![0.0; 3], vec![0.0; 30]);
            let (mut lp_b, mut g_b) = (vec![0.0; 3], vec![0.0; 30]);
            model
                .log_density_and_grad(&theta, batch, &mut lp_a, &mut g_a)
                .unwrap();
            EightSchoolsByHand
                .log_density_and_grad(&theta, batch, &mut lp_b, &mut g_b)
                .unwrap();
            // The same arithmetic in a different order: agreement to rounding (≈ 1e-13 on
            // values of size 10–100); 1e-10 is the issue's bar.
            for (a, b) in lp_a.iter().zip(&lp_b).chain(g_a.iter().zip(&g_b)) {
                assert!((a - b).abs() < 1e-10, "{batch:?}: {a} vs {b}");
            }
            // Central differences at h = 1e-5: error ≈ h²·|f‴| + 1e-16·|f|/h ≲ 1e-7 here.
            let err = check_gradient(&model, &theta, batch, 1e-5).unwrap();
            assert!(err < 1e-6, "{batch:?}: {err}");
        }
    }

    /// A prior on every kind of block: w ~ Dirichlet(2, 3, 5), c (ordered) with independent
    /// N(0, 2²) entries, r ∈ (−1, 2) with density ∝ (r + 1)(2 − r), v > 0 ~ Gamma(3, 2).
    struct EveryConstraint;

    const ALPHA: [f64; 3] = [2.0, 3.0, 5.0];

    impl ConstrainedModel for EveryConstraint {
        fn layout(&self) -> Layout {
            let mut l = Layout::default();
            l.push_constrained("w", vec![3], Constraint::Simplex)
                .unwrap();
            l.push_constrained("c", vec![3], Constraint::Ordered)
                .unwrap();
            l.push_constrained(
                "r",
                vec![],
                Constraint::Bounded {
                    lower: -1.0,
                    upper: 2.0,
                },
            )
            .unwrap();
            l.push_constrained("v", vec![], Constraint::Positive)
                .unwrap();
            l
        }
        fn log_prior(&self, x: &[f64], g: &mut [f64]) -> Result<f64> {
            let mut lp = 0.0;
            for k in 0..3 {
                lp += (ALPHA[k] - 1.0) * x[k].ln();
                g[k] += (ALPHA[k] - 1.0) / x[k];
                lp -= x[3 + k] * x[3 + k] / 8.0;
                g[3 + k] -= x[3 + k] / 4.0;
            }
            let (r, v) = (x[6], x[7]);
            lp += (r + 1.0).ln() + (2.0 - r).ln() + 2.0 * v.ln() - 2.0 * v;
            g[6] += 1.0 / (r + 1.0) - 1.0 / (2.0 - r);
            g[7] += 2.0 / v - 2.0;
            Ok(lp)
        }
        fn sample_prior(&self, _rng: &mut dyn RngCore, x: &mut [f64]) -> Result<()> {
            x.copy_from_slice(&[0.2, 0.3, 0.5, -1.0, 0.5, 0.7, 0.5, 1.5]);
            Ok(())
        }
    }

    #[test]
    fn every_constraint_has_a_consistent_gradient_with_and_without_the_jacobian() {
        let model = Constrained::new(EveryConstraint).unwrap();
        assert_eq!(LogDensity::dim(&model), 2 + 3 + 1 + 1);
        let theta: Vec<f64> = (0..14).map(|i| (i as f64 * 0.61).cos()).collect();
        for jacobian in [true, false] {
            let mut batch = Batch::full();
            batch.jacobian = jacobian;
            // As above: h = 1e-5 central differences on O(1) values give errors ≲ 1e-8.
            let err = check_gradient(&model, &theta, &batch, 1e-5).unwrap();
            assert!(err < 1e-6, "jacobian {jacobian}: {err}");
        }
        // sample_prior maps the model's constrained draw to θ.
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        let mut t = vec![0.0; 7];
        LogDensity::sample_prior(&model, &mut rng, &mut t).unwrap();
        let mut x = vec![0.0; 8];
        LogDensity::layout(&model).constrain(&t, &mut x).unwrap();
        let expect = [0.2, 0.3, 0.5, -1.0, 0.5, 0.7, 0.5, 1.5];
        assert!(
            x.iter().zip(expect).all(|(a, b)| (a - b).abs() < 1e-12),
            "{x:?}"
        );
    }

    struct Empty;
    impl ConstrainedModel for Empty {
        fn layout(&self) -> Layout {
            Layout::default()
        }
        fn log_prior(&self, _x: &[f64], _g: &mut [f64]) -> Result<f64> {
            Ok(0.0)
        }
    }

    #[test]
    fn a_model_without_parameters_is_rejected() {
        assert!(Constrained::new(Empty).is_err());
    }
}
