//! Where a particle starts after its location is drawn ([`super::Init`]): as drawn, or from the
//! Laplace approximation at the mode nearest the draw (docs/algorithms.md §2.5).
//!
//! The Laplace start climbs log p from the drawn location with L-BFGS ([`climb`]), takes the Hessian H at the best point by central differences of the
//! gradient (2d draws in one batched call), and sets the guide to N(mode, P⁻¹) with P = −H:
//! the full-rank guide gets L = chol(P⁻¹), the Normal and low-rank guides σ_c = 1/√P_cc (the
//! KL-optimal mean-field scale of a Gaussian), a point mass the mode. Where P is not positive
//! definite (a flat or saddle direction) each guide gets 1/√P_cc where P_cc > 0 and keeps its
//! drawn σ elsewhere. The location is then moved by [`LAPLACE_JITTER`] · L z (z standard
//! normal) so that particles that climbed to the same mode differ, and the whole start is kept
//! only when its ELBO estimate ([`COMPARISON_DRAWS`] draws, the same noise for both) is at least
//! the drawn particle's: a funnel's L-BFGS run heads for its unbounded neck, where a tight
//! Laplace guide has a worse ELBO than the draw.
//!
//! Each particle climbs from its own draw, so on a multimodal target the particles keep
//! the modes their draws lead to.

use std::sync::Mutex;

use rand_distr::Distribution;
use serde::{Deserialize, Serialize};

use super::{fullrank, GuideSettings};
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::{inv_softplus, softplus, Batch, LogDensity};

/// How a particle starts from its drawn location (docs/algorithms.md §2.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Start {
    /// As drawn: the location from [`super::Init`], σ = the guide's init scale (the default of
    /// the settings' constructors).
    #[default]
    Draw,
    /// From the Laplace approximation at the mode L-BFGS reaches from the draw (module docs);
    /// what [`crate::Method::defaults_for`] gives SMI for d ≤ [`crate::Method::FULL_RANK_MAX_DIM`].
    Laplace {
        /// The most L-BFGS iterations per particle (default [`Start::LAPLACE_ITERS`]).
        max_iters: u64,
    },
}

/// The location's spread around a shared mode, in units of the Laplace factor L.
pub const LAPLACE_JITTER: f64 = 0.5;

/// Draws of the ELBO estimates that decide between the drawn and the Laplace start.
pub const COMPARISON_DRAWS: usize = 64;

/// L-BFGS memory (pairs (s, y) kept).
const LBFGS_MEMORY: usize = 7;

impl Start {
    /// The Laplace start's default iteration cap.
    pub const LAPLACE_ITERS: u64 = 200;

    /// The Laplace start with [`Start::LAPLACE_ITERS`].
    pub fn laplace() -> Self {
        Start::Laplace {
            max_iters: Start::LAPLACE_ITERS,
        }
    }

    /// Whether this is [`Start::Draw`] (settings leave it out of their serialised form, so
    /// fingerprints of runs that predate the field are unchanged).
    pub fn is_draw(&self) -> bool {
        *self == Start::Draw
    }

    /// `"draw"` or `"laplace"`.
    pub fn name(&self) -> &'static str {
        match self {
            Start::Draw => "draw",
            Start::Laplace { .. } => "laplace",
        }
    }

    /// `"draw"` or `"laplace"` (with [`Start::LAPLACE_ITERS`]).
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for another name.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "draw" => Ok(Start::Draw),
            "laplace" => Ok(Start::laplace()),
            other => Err(Error::invalid(
                "start",
                format!("unknown start {other:?}; valid: draw, laplace"),
            )),
        }
    }

    /// Checks the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for a Laplace start of 0 iterations.
    pub fn validate(&self) -> Result<()> {
        match self {
            Start::Laplace { max_iters: 0 } => Err(Error::invalid(
                "start",
                "a Laplace start needs at least one L-BFGS iteration",
            )),
            _ => Ok(()),
        }
    }

    /// Moves one drawn particle `psi` (its location and the guide's initial parameters) to
    /// its start; `jacobian` as the engine's batches. Draws from `rng` only for the Laplace
    /// start.
    ///
    /// Returns the Laplace start's mass log p(θ̂) + log|L| when the particle took it (`None`
    /// when it kept its draw, or for [`Start::Draw`]), for [`Start::prune`].
    ///
    /// # Errors
    /// The model's errors (a non-finite value is no error: the climb avoids it as a point of
    /// density −∞).
    pub(crate) fn apply<M: LogDensity + ?Sized>(
        &self,
        guide: &GuideSettings,
        model: &M,
        jacobian: bool,
        rng: &mut rand_chacha::ChaCha8Rng,
        psi: &mut [f64],
    ) -> Result<Option<f64>> {
        let Start::Laplace { max_iters } = *self else {
            return Ok(None);
        };
        let d = model.dim();
        if d == 0 {
            return Ok(None);
        }
        let batch = Batch {
            jacobian,
            ..Batch::full()
        };
        let target = Target::new(model, &batch);
        // The drawn location's error is the model's to report (nothing later can fix it).
        target.eval_checked(&psi[..d])?;
        climb(&target, max_iters)?;
        let Some((cost, mode)) = target.best_point() else {
            return Ok(None);
        };
        let precision = hessian_precision(model, &batch, &mode)?;
        let mut laplace = psi.to_vec();
        let log_det = set_laplace(guide, &mode, &precision, rng, &mut laplace);
        if elbo_prefers(guide, model, &batch, rng, psi, &laplace)? {
            psi.copy_from_slice(&laplace);
            return Ok(Some(-cost + log_det));
        }
        Ok(None)
    }

    /// After every particle started: a particle whose Laplace mass (its `evidence`, from
    /// [`Start::apply`]) is below the best particle's by more than [`NEGLIGIBLE_MASS`] nats
    /// climbed to a point that holds no visible share of the posterior (a far local optimum;
    /// on ARMA(1, 1), a moving-average coefficient beyond ±1 where the errors explode, at
    /// log p −3e5 against the mode's 67). It becomes a copy of a kept Laplace particle (taken
    /// in turn), its location moved by [`LAPLACE_JITTER`] σ z. Particles that kept their draw
    /// (`None`) stay. Returns how many were replaced.
    pub(crate) fn prune(
        particles: &mut Matrix,
        evidence: &[Option<f64>],
        d: usize,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> usize {
        let Some(best) = evidence.iter().flatten().copied().reduce(f64::max) else {
            return 0;
        };
        let kept: Vec<usize> = (0..evidence.len())
            .filter(|&i| evidence[i].is_some_and(|e| e >= best - NEGLIGIBLE_MASS))
            .collect();
        let mut replaced = 0;
        for (i, e) in evidence.iter().enumerate() {
            if e.is_some_and(|e| e < best - NEGLIGIBLE_MASS) {
                let source = particles.row(kept[replaced % kept.len()]).to_vec();
                let row = particles.row_mut(i);
                row.copy_from_slice(&source);
                for c in 0..d.min(row.len()) {
                    let z: f64 = rand_distr::StandardNormal.sample(&mut *rng);
                    let sigma = if row.len() >= 2 * d {
                        softplus(row[d + c])
                    } else {
                        0.0
                    };
                    row[c] += LAPLACE_JITTER * sigma * z;
                }
                replaced += 1;
            }
        }
        replaced
    }
}

/// How far (nats of Laplace mass, log p(θ̂) + log|L|) a particle's start may lie below the
/// best particle's before [`Start::prune`] replaces it: e^−10 ≈ 5e-5 of the best mode's mass.
pub const NEGLIGIBLE_MASS: f64 = 10.0;

/// L-BFGS on −log p from the best point of `target` (memory [`LBFGS_MEMORY`], at most
/// `max_iters` iterations), with a backtracking line search on the Armijo condition
/// (c₁ = 1e-4) that halves the step, and cuts it tenfold after a non-finite value. The first
/// direction is −∇/‖∇‖ (a unit step, as in Nocedal and Wright's L-BFGS), later ones are scaled
/// by sᵀy/yᵀy; a pair with sᵀy ≤ 0 is not stored, and a direction that does not descend
/// restarts the memory. It ends after `max_iters`, when no step of the line search descends,
/// or when an iteration lowers −log p by less than 1e-12 of its magnitude. The best point seen
/// stands ([`Target`]). Written here rather than taken from argmin: argmin's L-BFGS ends at
/// the first non-finite value a line search meets (an overflowing exp(log σ) on the first
/// long step is the rule on the validation set, not the exception) and starts every run
/// with a step of length ‖∇‖.
fn climb<M: LogDensity + ?Sized>(target: &Target<'_, M>, max_iters: u64) -> Result<()> {
    let Some((mut f, mut x)) = target.best_point() else {
        return Ok(());
    };
    let (_, mut g) = target.eval(&x)?;
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(u, v)| u * v).sum::<f64>();
    let mut memory: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)> = Default::default();
    for _ in 0..max_iters {
        let norm = dot(&g, &g).sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return Ok(());
        }
        // Two-loop recursion: d = −H g.
        let mut q = g.clone();
        let mut alphas = Vec::with_capacity(memory.len());
        for (s, y, rho) in memory.iter().rev() {
            let a = rho * dot(s, &q);
            q.iter_mut().zip(y).for_each(|(qi, yi)| *qi -= a * yi);
            alphas.push(a);
        }
        let gamma = match memory.back() {
            Some((s, y, _)) => dot(s, y) / dot(y, y),
            None => 1.0 / norm,
        };
        q.iter_mut().for_each(|v| *v *= gamma);
        for ((s, y, rho), a) in memory.iter().zip(alphas.iter().rev()) {
            let b = rho * dot(y, &q);
            q.iter_mut().zip(s).for_each(|(qi, si)| *qi += (a - b) * si);
        }
        let mut direction: Vec<f64> = q.iter().map(|v| -v).collect();
        let mut slope = dot(&direction, &g);
        if slope.is_nan() || slope >= 0.0 {
            memory.clear();
            direction = g.iter().map(|v| -v / norm).collect();
            slope = -norm;
        }
        // Backtracking on the Armijo condition.
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..LINE_SEARCH_TRIALS {
            let trial: Vec<f64> = x
                .iter()
                .zip(&direction)
                .map(|(xi, di)| xi + step * di)
                .collect();
            let (ft, gt) = target.eval(&trial)?;
            if ft.is_finite() && ft <= f + 1e-4 * step * slope {
                accepted = Some((trial, ft, gt));
                break;
            }
            step *= if ft.is_finite() { 0.5 } else { 0.1 };
        }
        let Some((xn, fn_, gn)) = accepted else {
            return Ok(());
        };
        let s: Vec<f64> = xn.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = gn.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > 0.0 && sy.is_finite() {
            if memory.len() == LBFGS_MEMORY {
                memory.pop_front();
            }
            memory.push_back((s, y, 1.0 / sy));
        }
        let gain = f - fn_;
        (x, f, g) = (xn, fn_, gn);
        if gain <= 1e-12 * f.abs().max(1.0) {
            return Ok(());
        }
    }
    Ok(())
}

/// Trials of one line search of [`climb`] (the step shrinks at least twofold per trial).
const LINE_SEARCH_TRIALS: usize = 60;

/// −log p with its gradient, remembering the best point evaluated.
struct Target<'a, M: LogDensity + ?Sized> {
    model: &'a M,
    batch: &'a Batch,
    /// (−log p, θ) of the best finite point so far.
    best: Mutex<Option<(f64, Vec<f64>)>>,
}

impl<'a, M: LogDensity + ?Sized> Target<'a, M> {
    fn new(model: &'a M, batch: &'a Batch) -> Self {
        Target {
            model,
            batch,
            best: Mutex::new(None),
        }
    }

    /// log p and ∇log p at `theta`, the model's error passed on.
    fn eval_checked(&self, theta: &[f64]) -> Result<(f64, Vec<f64>)> {
        let mut logp = [0.0];
        let mut grad = vec![0.0; theta.len()];
        self.model
            .log_density_and_grad(theta, self.batch, &mut logp, &mut grad)?;
        if logp[0].is_finite() && grad.iter().all(|g| g.is_finite()) {
            let cost = -logp[0];
            let mut best = self.best.lock().unwrap_or_else(|e| e.into_inner());
            if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                *best = Some((cost, theta.to_vec()));
            }
        }
        Ok((logp[0], grad))
    }

    /// (−log p, −∇log p) with a non-finite value as (+∞, 0): the line search backs off from
    /// it. The model's errors are passed on (a fit fails on them, as a step would).
    fn eval(&self, theta: &[f64]) -> Result<(f64, Vec<f64>)> {
        let (lp, g) = self.eval_checked(theta)?;
        Ok(if lp.is_finite() && g.iter().all(|v| v.is_finite()) {
            (-lp, g.into_iter().map(|v| -v).collect())
        } else {
            (f64::INFINITY, vec![0.0; theta.len()])
        })
    }

    /// (−log p, θ) of the best finite point so far.
    fn best_point(&self) -> Option<(f64, Vec<f64>)> {
        let best = self.best.lock().unwrap_or_else(|e| e.into_inner());
        best.clone()
    }
}

/// P = −H at `mode` (d×d, symmetrised), H by central differences of the gradient with steps
/// h_j = 1e-4 · max(1, |mode_j|), all 2d draws in one call (non-finite gradients leave
/// non-finite entries, which the start treats as no curvature information).
fn hessian_precision<M: LogDensity + ?Sized>(
    model: &M,
    batch: &Batch,
    mode: &[f64],
) -> Result<Matrix> {
    let d = mode.len();
    let h: Vec<f64> = mode.iter().map(|x| 1e-4 * x.abs().max(1.0)).collect();
    let mut theta = Vec::with_capacity(2 * d * d);
    for (j, hj) in h.iter().enumerate() {
        for sign in [1.0, -1.0] {
            theta.extend(mode.iter().enumerate().map(
                |(i, x)| {
                    if i == j {
                        x + sign * hj
                    } else {
                        *x
                    }
                },
            ));
        }
    }
    let mut logp = vec![0.0; 2 * d];
    let mut grad = vec![0.0; 2 * d * d];
    let mut p = Matrix::zeros(d, d);
    model.log_density_and_grad(&theta, batch, &mut logp, &mut grad)?;
    // Column j of H: (g(mode + h_j e_j) − g(mode − h_j e_j)) / 2h_j.
    for j in 0..d {
        let (plus, minus) = (&grad[2 * j * d..(2 * j + 1) * d], &grad[(2 * j + 1) * d..]);
        for i in 0..d {
            p.set(i, j, -(plus[i] - minus[i]) / (2.0 * h[j]));
        }
    }
    for i in 0..d {
        for j in 0..i {
            let s = 0.5 * (p.get(i, j) + p.get(j, i));
            p.set(i, j, s);
            p.set(j, i, s);
        }
    }
    Ok(p)
}

/// The lower Cholesky factor L of P⁻¹ (Σ = LLᵀ, d×d), by faer's LLᵀ of P and of its
/// inverse; `None` where P (or, after rounding, P⁻¹) is not positive definite or not finite.
fn covariance_factor(precision: &Matrix) -> Option<faer::Mat<f64>> {
    use faer::linalg::solvers::DenseSolveCore;
    let d = precision.rows();
    if precision.as_slice().iter().any(|v| !v.is_finite()) {
        return None;
    }
    let p = faer::Mat::<f64>::from_fn(d, d, |i, j| precision.get(i, j));
    let cov = p.llt(faer::Side::Lower).ok()?.inverse();
    let l = cov.llt(faer::Side::Lower).ok()?.L().to_owned();
    (0..d).all(|c| l[(c, c)] > 0.0).then_some(l)
}

/// Writes the Laplace start into `psi` (which holds the drawn particle): location `mode` plus
/// the jitter, scales and (full rank) factor from `precision`. Returns log|L| = Σ ln σ_c of
/// the full-rank factor, or of the scales otherwise (0 for a point mass).
fn set_laplace(
    guide: &GuideSettings,
    mode: &[f64],
    precision: &Matrix,
    rng: &mut rand_chacha::ChaCha8Rng,
    psi: &mut [f64],
) -> f64 {
    let d = mode.len();
    let factor = match guide {
        GuideSettings::FullRank { .. } => covariance_factor(precision),
        _ => None,
    };
    // σ_c: the factor's diagonal, else 1/√P_cc where positive, else the drawn σ.
    let sigma: Vec<f64> = (0..d)
        .map(|c| match &factor {
            Some(l) => l[(c, c)],
            None => {
                let pcc = precision.get(c, c);
                if pcc > 0.0 && pcc.is_finite() {
                    1.0 / pcc.sqrt()
                } else {
                    match guide {
                        GuideSettings::Delta => 0.0,
                        _ => softplus(psi[d + c]),
                    }
                }
            }
        })
        .collect();
    let z: Vec<f64> = (0..d)
        .map(|_| rand_distr::StandardNormal.sample(&mut *rng))
        .collect();
    for c in 0..d {
        let spread = match &factor {
            Some(l) => (0..=c).map(|k| l[(c, k)] * z[k]).sum::<f64>(),
            None => sigma[c] * z[c],
        };
        psi[c] = mode[c] + LAPLACE_JITTER * spread;
    }
    match guide {
        GuideSettings::Delta => {}
        GuideSettings::Normal { .. } | GuideSettings::LowRank { .. } => {
            for c in 0..d {
                psi[d + c] = inv_softplus(sigma[c]);
            }
        }
        GuideSettings::FullRank { .. } => {
            for c in 0..d {
                psi[d + c] = inv_softplus(sigma[c]);
            }
            let lower = &mut psi[2 * d..];
            for c in 0..d {
                for j in 0..c {
                    lower[fullrank::tri(c) + j] = match &factor {
                        Some(l) => l[(c, j)] / sigma[c],
                        None => 0.0,
                    };
                }
            }
        }
    }
    match guide {
        GuideSettings::Delta => 0.0,
        _ => sigma.iter().map(|s| s.ln()).sum(),
    }
}

/// Whether `laplace` has an ELBO estimate at least `drawn`'s, both from the same
/// [`COMPARISON_DRAWS`] standard-normal draws (a point mass: log p at the point). A start
/// whose estimate is not finite loses; the drawn one wins ties.
fn elbo_prefers<M: LogDensity + ?Sized>(
    guide: &GuideSettings,
    model: &M,
    batch: &Batch,
    rng: &mut rand_chacha::ChaCha8Rng,
    drawn: &[f64],
    laplace: &[f64],
) -> Result<bool> {
    let d = model.dim();
    let s = match guide {
        GuideSettings::Delta => 1,
        _ => COMPARISON_DRAWS,
    };
    let row = guide.noise_dim(d);
    let eps: Vec<f64> = (0..s * row)
        .map(|_| rand_distr::StandardNormal.sample(&mut *rng))
        .collect();
    let elbo = |psi: &[f64]| -> Result<f64> {
        let mut theta = vec![0.0; s * d];
        guide.sample(psi, &eps, &mut theta);
        let (mut logp, mut grad) = (vec![0.0; s], vec![0.0; s * d]);
        model.log_density_and_grad(&theta, batch, &mut logp, &mut grad)?;
        let one = Matrix::from_rows(&[psi.to_vec()])?;
        let (mut logq, mut gq) = (vec![0.0; s], vec![0.0; s * d]);
        guide.mixture_log_density(&one, &theta, &mut logq, &mut gq);
        let v = logp.iter().zip(&logq).map(|(p, q)| p - q).sum::<f64>() / s as f64;
        Ok(if v.is_nan() { f64::NEG_INFINITY } else { v })
    };
    let (e_drawn, e_laplace) = (elbo(drawn)?, elbo(laplace)?);
    // NaN counts as −∞ above; the drawn start wins ties.
    Ok(e_laplace.is_finite() && e_laplace > e_drawn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FnDensity;
    use rand::SeedableRng;

    /// A correlated Gaussian N(μ, Σ) with Σ = [[4, 1.8], [1.8, 1]] (correlation 0.9), far
    /// from the draw.
    fn gaussian() -> impl LogDensity {
        let mu = [30.0, -20.0];
        // P = Σ⁻¹ = [[1, −1.8], [−1.8, 4]] / 0.76.
        let p = [[1.0 / 0.76, -1.8 / 0.76], [-1.8 / 0.76, 4.0 / 0.76]];
        FnDensity::new(2, move |x: &[f64], g: &mut [f64]| {
            let u = [x[0] - mu[0], x[1] - mu[1]];
            let pu = [
                p[0][0] * u[0] + p[0][1] * u[1],
                p[1][0] * u[0] + p[1][1] * u[1],
            ];
            g[0] = -pu[0];
            g[1] = -pu[1];
            -0.5 * (u[0] * pu[0] + u[1] * pu[1])
        })
    }

    /// One particle of `guide` on [`gaussian`], drawn and started from the Laplace
    /// approximation under `seed`.
    fn started(guide: GuideSettings, seed: u64) -> Vec<f64> {
        let model = gaussian();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut psi = vec![0.0; guide.param_dim(2)];
        guide
            .init_particle(&model, &crate::Init::default(), &mut rng, &mut psi)
            .unwrap();
        Start::laplace()
            .apply(&guide, &model, true, &mut rng, &mut psi)
            .unwrap();
        psi
    }

    #[test]
    fn full_rank_start_is_the_gaussian_itself() {
        let psi = started(GuideSettings::full_rank(), 1);
        // L = chol(Σ) = [[2, 0], [0.9, √0.19]]: σ = (2, √0.19), u₁₀ = 0.9 / √0.19.
        let (s0, s1) = (softplus(psi[2]), softplus(psi[3]));
        assert!((s0 - 2.0).abs() < 1e-4, "σ₀ = {s0}");
        assert!((s1 - 0.19f64.sqrt()).abs() < 1e-4, "σ₁ = {s1}");
        assert!(
            (psi[4] - 0.9 / 0.19f64.sqrt()).abs() < 1e-3,
            "u = {}",
            psi[4]
        );
        // The location: the mode plus at most a few jitter sds (0.5 · L z).
        assert!(
            (psi[0] - 30.0).abs() < 4.0 && (psi[1] + 20.0).abs() < 2.0,
            "{psi:?}"
        );
    }

    #[test]
    fn mean_field_start_takes_the_conditional_scales() {
        let psi = started(GuideSettings::normal(), 2);
        // 1/√P_cc: √0.76 and √(0.76/4).
        assert!((softplus(psi[2]) - 0.76f64.sqrt()).abs() < 1e-4);
        assert!((softplus(psi[3]) - 0.19f64.sqrt()).abs() < 1e-4);
    }

    #[test]
    fn the_draw_is_kept_where_the_climb_cannot_help() {
        // log p = 0 on [−5, 5] and −∞ outside: the gradient is 0, so the climb stays at the
        // draw, the Hessian is 0 (not positive definite) and the scale stays as drawn.
        let model = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
            g[0] = 0.0;
            if x[0].abs() <= 5.0 {
                0.0
            } else {
                f64::NEG_INFINITY
            }
        });
        let guide = GuideSettings::normal();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut psi = vec![0.5, inv_softplus(0.1)];
        Start::laplace()
            .apply(&guide, &model, true, &mut rng, &mut psi)
            .unwrap();
        assert!((softplus(psi[1]) - 0.1).abs() < 1e-12, "{psi:?}");
        assert!(psi[0].abs() <= 5.0);
    }

    #[test]
    fn the_climb_reaches_a_regression_mode_past_an_overflowing_scale() {
        // y = 80 + 0.5 x + e, x around 100; θ = (a, b, log σ), flat priors (log-Jacobian of
        // σ included, so the mode has σ² = RSS/(N − 1)). From (1, −1.5, 0.5) the first steps
        // are long enough to overflow exp(log σ): the line search must back off, not stop.
        let n = 400;
        let xs: Vec<f64> = (0..n)
            .map(|i| 100.0 + 15.0 * ((i * 37 % 101) as f64 / 50.0 - 1.0))
            .collect();
        let ys: Vec<f64> = xs
            .iter()
            .enumerate()
            .map(|(i, x)| 80.0 + 0.5 * x + 15.0 * ((i * 53 % 97) as f64 / 48.0 - 1.0))
            .collect();
        // Ordinary least squares, the mode's (a, b).
        let (mx, my) = (
            xs.iter().sum::<f64>() / n as f64,
            ys.iter().sum::<f64>() / n as f64,
        );
        let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
        let b = sxy / sxx;
        let a = my - b * mx;
        let rss: f64 = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (y - a - b * x).powi(2))
            .sum();
        let (xs2, ys2) = (xs.clone(), ys.clone());
        let model = FnDensity::new(3, move |t: &[f64], g: &mut [f64]| {
            let s = t[2].exp();
            let (mut lp, mut ga, mut gb, mut gs) = (0.0, 0.0, 0.0, 0.0);
            for (x, y) in xs2.iter().zip(&ys2) {
                let r = (y - t[0] - t[1] * x) / s;
                lp += -0.5 * r * r - t[2];
                ga += r / s;
                gb += r * x / s;
                gs += r * r - 1.0;
            }
            g[0] = ga;
            g[1] = gb;
            g[2] = gs + 1.0;
            lp + t[2]
        });
        let batch = Batch::full();
        let target = Target::new(&model, &batch);
        target.eval_checked(&[1.0, -1.5, 0.5]).unwrap();
        climb(&target, Start::LAPLACE_ITERS).unwrap();
        let best = target.best_point().unwrap().1;
        let sigma = (rss / (n - 1) as f64).sqrt();
        assert!((best[0] - a).abs() < 1e-3 * a.abs(), "a {} vs {a}", best[0]);
        assert!((best[1] - b).abs() < 1e-3 * b.abs(), "b {} vs {b}", best[1]);
        assert!(
            (best[2].exp() - sigma).abs() < 1e-3 * sigma,
            "σ {}",
            best[2].exp()
        );
    }

    #[test]
    fn starts_of_negligible_mass_become_copies_of_kept_ones() {
        // d = 1, Normal guide: rows [loc, ρ].
        let mut particles = Matrix::from_rows(&[
            vec![1.0, 0.0],
            vec![50.0, 3.0],
            vec![7.0, -1.0],
            vec![2.0, 1.0],
        ])
        .unwrap();
        let evidence = [Some(0.0), Some(-50.0), None, Some(-5.0)];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        assert_eq!(Start::prune(&mut particles, &evidence, 1, &mut rng), 1);
        // Row 1 is row 0's guide, its location within a few jitter sds (½σ, σ = softplus(0)).
        assert_eq!(particles.get(1, 1), 0.0);
        assert!((particles.get(1, 0) - 1.0).abs() < 4.0 * 0.5 * softplus(0.0));
        // The draw kept (None) and the start within 10 nats stay.
        assert_eq!(particles.row(2), &[7.0, -1.0]);
        assert_eq!(particles.row(3), &[2.0, 1.0]);
    }

    #[test]
    fn names_round_trip_and_zero_iterations_are_refused() {
        for s in [Start::Draw, Start::laplace()] {
            assert_eq!(Start::from_name(s.name()).unwrap(), s);
        }
        assert!(Start::from_name("pathfinder").is_err());
        assert!(Start::Laplace { max_iters: 0 }.validate().is_err());
        assert!(Start::laplace().validate().is_ok());
    }
}
