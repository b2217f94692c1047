//! The exact mean-field Gaussian optimum of a posterior, for posteriors that are not Gaussian
//! (eight schools' log tau), where 1/√(Σ⁻¹)_ii of the reference covariance is not the optimum.
//!
//! The ELBO of q = N(m, diag s²) on unconstrained θ, E_q[log p(θ)] + Σ_c ln s_c, is replaced by
//! its sample-average approximation over n fixed standard-Normal draws ε_i (common random
//! numbers): ELBO_n(m, s) = (1/n) Σ_i log p(m + s ⊙ ε_i) + Σ_c ln s_c, a deterministic smooth
//! function, maximised by damped Newton steps. Its maximiser differs from the exact one by
//! O(1/√n) (about 1 % of s for n = 20 000).

use smi::rand::{ChaCha8Rng, SeedableRng};
use smi::{Batch, Error, LogDensity, Matrix, Result};

use super::density::std_normal;
use super::linalg::{cholesky, cholesky_solve};
use super::reference::UnconstrainedMoments;
use super::{Loaded, StanPosterior};

/// Draws of the sample-average ELBO of [`mean_field_target`].
pub const TARGET_DRAWS: usize = 20_000;

/// The mean-field Gaussian that maximises the ELBO.
#[derive(Clone, Debug)]
pub struct MeanFieldOptimum {
    /// m, its mean (unconstrained).
    pub mean: Vec<f64>,
    /// s, its sds.
    pub sd: Vec<f64>,
    /// ELBO_n at the optimum (up to the model's constant).
    pub elbo: f64,
    /// Newton iterations taken.
    pub iterations: usize,
}

/// The sample-average ELBO over fixed draws, in scaled coordinates x = (a, b):
/// m = m₀ + s₀ ⊙ a, s = s₀ ⊙ exp(b).
struct SaaElbo<'a, M: ?Sized> {
    model: &'a M,
    m0: &'a [f64],
    s0: &'a [f64],
    eps: Vec<f64>,
}

impl<M: LogDensity + ?Sized> SaaElbo<'_, M> {
    fn dim(&self) -> usize {
        self.m0.len()
    }

    /// ELBO_n(x) and its gradient in x (length 2d).
    fn eval(&self, x: &[f64]) -> Result<(f64, Vec<f64>)> {
        let d = self.dim();
        let n = self.eps.len() / d;
        let (a, b) = x.split_at(d);
        let m: Vec<f64> = (0..d).map(|c| self.m0[c] + self.s0[c] * a[c]).collect();
        let s: Vec<f64> = (0..d).map(|c| self.s0[c] * b[c].exp()).collect();
        let theta: Vec<f64> = self
            .eps
            .iter()
            .enumerate()
            .map(|(k, e)| m[k % d] + s[k % d] * e)
            .collect();
        let (mut lp, mut g) = (vec![0.0; n], vec![0.0; n * d]);
        self.model
            .log_density_and_grad(&theta, &Batch::full(), &mut lp, &mut g)?;
        let mut grad = vec![0.0; 2 * d];
        for (gi, ei) in g.chunks_exact(d).zip(self.eps.chunks_exact(d)) {
            for c in 0..d {
                grad[c] += gi[c];
                grad[d + c] += gi[c] * ei[c];
            }
        }
        for c in 0..d {
            grad[c] *= self.s0[c] / n as f64;
            grad[d + c] = grad[d + c] * s[c] / n as f64 + 1.0;
        }
        let elbo = lp.iter().sum::<f64>() / n as f64 + s.iter().map(|v| v.ln()).sum::<f64>();
        if !elbo.is_finite() || grad.iter().any(|v| !v.is_finite()) {
            return Err(Error::non_finite("the sample-average ELBO"));
        }
        Ok((elbo, grad))
    }

    /// −∇²ELBO_n(x) by central differences of the gradient (step 1e-4 in x), symmetrised.
    fn negative_hessian(&self, x: &[f64]) -> Result<Matrix> {
        let p = x.len();
        let h = 1e-4;
        let mut hess = Matrix::zeros(p, p);
        for j in 0..p {
            let (mut up, mut dn) = (x.to_vec(), x.to_vec());
            up[j] += h;
            dn[j] -= h;
            let (gu, gd) = (self.eval(&up)?.1, self.eval(&dn)?.1);
            for i in 0..p {
                hess.set(i, j, -(gu[i] - gd[i]) / (2.0 * h));
            }
        }
        Ok(Matrix::from_fn(p, p, |i, j| {
            0.5 * (hess.get(i, j) + hess.get(j, i))
        }))
    }
}

/// The mean-field Gaussian maximising the ELBO of `model` (with the Jacobian, on the full
/// data), estimated with `draws` fixed draws (seed `seed`) and started from (`mean`, `sd`)
/// (e.g. the reference's unconstrained mean and mean-field sds). Newton steps, damped by a
/// Levenberg term where the Hessian is not negative definite and by halving until the ELBO
/// rises, until the largest gradient entry is below 1e-6 (at most 100 iterations).
///
/// # Errors
/// The model's errors; [`Error::NonFinite`] when the ELBO is not finite at the start.
pub fn mean_field_optimum<M: LogDensity + ?Sized>(
    model: &M,
    mean: &[f64],
    sd: &[f64],
    draws: usize,
    seed: u64,
) -> Result<MeanFieldOptimum> {
    let d = model.dim();
    if mean.len() != d || sd.len() != d {
        return Err(Error::shape("mean and sd", d, mean.len().min(sd.len())));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let eps = (0..draws * d).map(|_| std_normal(&mut rng)).collect();
    let f = SaaElbo {
        model,
        m0: mean,
        s0: sd,
        eps,
    };
    let mut x = vec![0.0; 2 * d];
    let (mut elbo, mut grad) = f.eval(&x)?;
    let mut iterations = 0;
    while iterations < 100 && grad.iter().fold(0.0f64, |a, g| a.max(g.abs())) > 1e-6 {
        iterations += 1;
        let mut neg_h = f.negative_hessian(&x)?;
        let mut lambda = 0.0;
        let l = loop {
            match cholesky(&neg_h) {
                Ok(l) => break l,
                Err(_) => {
                    let add = if lambda == 0.0 { 1e-3 } else { lambda * 9.0 };
                    lambda += add;
                    for i in 0..2 * d {
                        neg_h.set(i, i, neg_h.get(i, i) + add);
                    }
                }
            }
        };
        let step = cholesky_solve(&l, &grad);
        let mut t = 1.0;
        loop {
            let trial: Vec<f64> = x.iter().zip(&step).map(|(a, s)| a + t * s).collect();
            if let Ok((e, g)) = f.eval(&trial) {
                if e >= elbo - 1e-12 {
                    (x, elbo, grad) = (trial, e, g);
                    break;
                }
            }
            t *= 0.5;
            if t < 1e-10 {
                return Err(Error::non_finite("no Newton step raises the ELBO"));
            }
        }
    }
    Ok(MeanFieldOptimum {
        mean: (0..d).map(|c| mean[c] + sd[c] * x[c]).collect(),
        sd: (0..d).map(|c| sd[c] * x[d + c].exp()).collect(),
        elbo,
        iterations,
    })
}

/// The reference's unconstrained moments with the exact mean-field sds OVI should reach: the
/// covariance formula 1/√(Σ⁻¹)_ii for a posterior that is close to Gaussian there
/// ([`StanPosterior::NEAR_GAUSSIAN`]), else the [`mean_field_optimum`] of [`TARGET_DRAWS`]
/// draws (seed 1) started from it.
///
/// # Errors
/// From [`mean_field_optimum`] or the reference's moments.
pub fn mean_field_target<M: StanPosterior>(loaded: &Loaded<M>) -> Result<UnconstrainedMoments> {
    let mut moments = loaded.reference.unconstrained(&loaded.model)?;
    if !M::NEAR_GAUSSIAN {
        let opt = mean_field_optimum(
            &loaded.model,
            &moments.mean,
            &moments.mean_field_sd,
            TARGET_DRAWS,
            1,
        )?;
        moments.mean_field_sd = opt.sd;
    }
    Ok(moments)
}
