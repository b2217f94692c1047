//! The Stein engine ([`SteinVi`]): SMI, and SVGD/ASVGD as presets of it (docs/algorithms.md §2, §4).
//!
//! One step: draw ε, θ = guide.sample(ψ, ε), evaluate the model on all m·S draws in one batched
//! call, form the per-particle ELBO gradients ĝ with the stop-gradient mixture denominator,
//! build the kernel on ψ, and move ψ along φ = c·Σ_i k(ψ_i, ψ_ℓ)ĝ_i + (α/m)Σ_i ∇_{ψ_i}k(ψ_i, ψ_ℓ)
//! (c = 1/m with paper normalisation, 1 with NumPyro's).

pub(crate) mod force;
mod fused;
mod settings;
mod shared;
#[cfg(test)]
mod tests;

pub use settings::{AttractionNorm, GradientReuse, NumpyroDefect, SteinSettings};

use std::sync::Mutex;

use crate::engine::{self, Engine, State, StepInfo};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::matrix::Matrix;
use crate::model::Layout;
use crate::model::LogDensity;
use crate::model::{Batch, Batcher};
use crate::posterior::Mixture;

/// The Stein mixture engine over a model `M`.
///
/// ```
/// use smi::{testing::DiagNormal, run, NoObserver, Engine, RunSettings, SteinSettings, SteinVi};
/// let target = DiagNormal::standard(2)?;
/// let mut settings = SteinSettings::smi();
/// settings.num_particles = 1;
/// settings.num_elbo_particles = 50;
/// let engine = SteinVi::new(&target, settings)?;
/// let fit = run(&engine, engine.init()?, &RunSettings::steps(1500), &mut NoObserver)?;
/// let var = engine.posterior(&fit.state).marginal_variance();
/// assert!(var.iter().all(|v| (v - 1.0).abs() < 0.2));
/// # Ok::<(), smi::Error>(())
/// ```
pub struct SteinVi<'a, M: LogDensity + ?Sized> {
    model: &'a M,
    settings: SteinSettings,
    kernel: Box<dyn Kernel>,
    layout: Layout,
    /// The shared (non-mixture) parameters, if any.
    shared: Option<shared::Shared>,
    /// With a low-rank or full-rank guide: the layout of the columns the kernel sees (loc and
    /// ρ; docs/algorithms.md §2.12).
    kernel_view: Option<Layout>,
    batcher: Batcher,
    name: String,
    scratch: Mutex<force::Scratch>,
}

impl<'a, M: LogDensity + ?Sized> SteinVi<'a, M> {
    /// An engine for `model` with `settings` (validated).
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] from [`SteinSettings::validate`], when the batch size
    /// exceeds the model's data, when a step's buffers for this model (m×p particles, K×d
    /// draws with K = m·S, the kernel's m×m×p gradients, …) would exceed the address space
    /// or the kernel's m × m matrices cannot be allocated (field `num_particles`), or (field
    /// `shared`) when a shared block is not a block of the model's layout or every
    /// block is shared.
    pub fn new(model: &'a M, settings: SteinSettings) -> Result<Self> {
        settings.validate()?;
        check_sizes(model.dim(), &settings)?;
        let batcher = engine::batcher_for(model, settings.batch_size)?;
        let kernel = settings.kernel.build()?;
        let model_layout = model.layout();
        let shared =
            shared::Shared::new(&model_layout, model.dim(), &settings.shared, settings.guide)?;
        let layout = settings.guide.layout(&model_layout);
        let kernel_view = matches!(
            settings.guide,
            crate::GuideSettings::LowRank { .. } | crate::GuideSettings::FullRank { .. }
        )
        .then(|| crate::GuideSettings::normal().layout(&model_layout));
        let name = match (settings.guide, settings.schedule) {
            (crate::GuideSettings::Delta, crate::Schedule::Cyclical { .. }) => "asvgd",
            (crate::GuideSettings::Delta, _) => "svgd",
            _ => "smi",
        }
        .to_string();
        Ok(SteinVi {
            model,
            batcher,
            settings,
            kernel,
            layout,
            shared,
            kernel_view,
            name,
            scratch: Mutex::new(force::Scratch::default()),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &SteinSettings {
        &self.settings
    }

    /// The names of a particle's columns (shared blocks included).
    pub fn particle_layout(&self) -> &Layout {
        &self.layout
    }

    /// The Stein force φ (m×p) at the current particles, with the ELBO estimate, drawing noise
    /// and batches from `state.rng` (the state's particles are not changed).
    ///
    /// With shared parameters ([`SteinSettings::shared`]) the kernel and the force act on the
    /// Stein columns only; every row's shared location columns hold the ascent gradient ∇_η L
    /// of the mixture ELBO, and the shared blocks' ρ columns (Normal guide) 0.
    ///
    /// # Errors
    /// As [`Engine::step`], and [`Error::NonFinite`] for a non-finite model value.
    pub fn force(&self, state: &mut State, rows: Option<&[usize]>) -> Result<(Matrix, f64)> {
        let st = &self.settings;
        let d = self.model.dim();
        engine::check_particles(state, st.num_particles, st.guide.param_dim(d))?;
        let split = self.shared.as_ref();
        let split_parts = split.map(|sh| sh.stein_particles(&state.particles));
        let eta = split.map(|sh| sh.point(&state.particles));
        // The Stein part of the particles: all of them without shared parameters.
        let parts = split_parts.as_ref().unwrap_or(&state.particles);
        let m = parts.rows();
        let s = st.num_elbo_particles;
        let groups = match st.gradient_reuse {
            crate::GradientReuse::Shared => 1,
            crate::GradientReuse::PerPair => m,
        };
        let k = groups * m * s;
        let mut scratch = self
            .scratch
            .lock()
            .map_err(|_| Error::Data("scratch buffer poisoned by an earlier panic".into()))?;
        // the step's noise key (Normal guide); its rows are drawn where they are used
        let key = st.guide.noise_key(&mut state.rng);
        let noise = key
            .as_ref()
            .map_or(force::Noise::Given(&[]), force::Noise::Key);
        // the batch draw (serial: it reads the state's generator) beside the fused step's
        // coefficients and σ, on big steps; the same values either way
        let fused = force::is_fused(self.model, &st.guide, s, k, split.is_some());
        let big = k * self.model.dim() >= PAR_JOIN_VALUES;
        let prepare = fused && big;
        // the particles of the mixture denominator: the particles, or with the double-transform
        // defect (docs/algorithms.md §2.9) their scales transformed once more
        let twice = match st.defect {
            Some(settings::NumpyroDefect::DoubleTransform) => Some(double_transformed(parts)),
            _ => None,
        };
        let denominator = twice.as_ref();
        let scratch_now = &mut *scratch;
        let (batch, prepared) = join_if(
            prepare,
            || match rows {
                None => self.batcher.draw(&mut state.rng, k),
                Some(r) => Batch::shared(r.to_vec(), self.model.num_data()),
            },
            || {
                if prepare {
                    scratch_now.fused.prepare(parts, denominator)
                } else {
                    Ok(())
                }
            },
        );
        let mut batch = batch;
        batch.jacobian = st.jacobian;
        let tau = st.loss_temperature * st.schedule.value(state.step);
        let kernel_layout = split.map_or(&self.layout, |sh| sh.kernel_layout());
        // a structured guide's kernel sees loc and ρ only (docs/algorithms.md §2.12)
        let view = self
            .kernel_view
            .as_ref()
            .map(|l| (l, Matrix::from_fn(m, l.dim(), |i, c| parts.get(i, c))));
        let (kernel_parts, kernel_layout) = match &view {
            Some((l, x)) => (x, *l),
            None => (parts, kernel_layout),
        };
        // the ELBO gradients beside the kernel (which needs only the particles), on big steps
        let scratch_now = &mut *scratch;
        let (result, gram) = join_if(
            big && parts.rows() * parts.cols() >= PAR_JOIN_VALUES,
            || {
                prepared?;
                batch.validate(self.model.num_data(), k)?;
                let shared = split
                    .zip(eta.as_deref())
                    .map(|(split, eta)| force::SharedPoint { split, eta });
                let draws = force::Draws {
                    particles: parts,
                    denominator,
                    noise,
                    batch: &batch,
                    tau,
                    per_particle: s,
                    groups,
                };
                force::elbo_gradients(self.model, &st.guide, &draws, shared, scratch_now, prepare)
            },
            || self.kernel.compute(kernel_parts, kernel_layout),
        );
        drop(scratch);
        let force::ElboGradients {
            mut ghats,
            elbo,
            grad_eta,
        } = result?;
        if st.defect == Some(settings::NumpyroDefect::NoChainRule) {
            for g in &mut ghats {
                without_chain_rule(parts, g);
            }
        }
        let gram = gram?;
        let c_att = match st.attraction {
            AttractionNorm::Paper => 1.0 / m as f64,
            AttractionNorm::Numpyro => 1.0,
        };
        let c_rep = st.repulsion_temperature / m as f64;
        let mut phi = match st.gradient_reuse {
            _ if view.is_some() => viewed_direction(&gram, &ghats, c_att, c_rep)?,
            crate::GradientReuse::Shared => {
                gram.weights
                    .direction(&ghats[0], c_att, &gram.repulsion, c_rep)
            }
            crate::GradientReuse::PerPair => {
                let mut a = Matrix::zeros(m, parts.cols());
                for (l, g) in ghats.iter().enumerate() {
                    let al = gram.weights.attract(g);
                    a.row_mut(l).copy_from_slice(al.row(l));
                }
                for (f, r) in a.as_mut_slice().iter_mut().zip(gram.repulsion.as_slice()) {
                    *f = c_att * *f + c_rep * r;
                }
                a
            }
        };
        if let Some(sh) = split {
            phi = sh.direction(&phi, &grad_eta, state.particles.cols());
        }
        // ĝ's buffer back to the scratch for the next step (a poisoned lock keeps none)
        if let Ok(mut scratch) = self.scratch.lock() {
            scratch.fused.keep_ghat(ghats);
        }
        Ok((phi, elbo))
    }

    /// The shape of this engine's states (see [`engine::Particles`]).
    fn particles(&self) -> engine::Particles<'_> {
        let st = &self.settings;
        engine::Particles::new(st.num_particles, st.guide, self.model.dim(), &st.optimizer)
    }
}

impl<M: LogDensity + ?Sized> Engine for SteinVi<'_, M> {
    fn name(&self) -> &str {
        &self.name
    }

    /// A fresh state; with shared parameters every particle's shared columns take particle 0's
    /// initial value (and the Normal guide's ρ of them [`SteinSettings::SHARED_RHO`]).
    fn init(&self) -> Result<State> {
        let st = &self.settings;
        let mut state = self.particles().init(
            self.model,
            &st.init,
            st.start,
            st.jacobian,
            st.seed,
            self.fingerprint(),
        )?;
        if let Some(sh) = &self.shared {
            sh.tie(&mut state.particles);
        }
        Ok(state)
    }

    fn posterior(&self, state: &State) -> Mixture {
        self.particles().mixture(state)
    }

    /// Heavy tails for SMI's guides; nothing for point masses; no falls (the repulsion may
    /// lower the ELBO estimate).
    fn elbo_checks(&self) -> engine::ElboChecks {
        engine::ElboChecks {
            heavy_tails: self.settings.guide != crate::GuideSettings::Delta,
            falls: false,
        }
    }

    fn fingerprint(&self) -> String {
        engine::fingerprint(self.name(), self.model, &self.settings)
    }

    /// As the trait's, and with shared parameters a checkpoint whose rows disagree on them is
    /// an [`Error::Checkpoint`].
    fn load_state(&self, path: &std::path::Path) -> Result<State> {
        let state = self.particles().load(path, &self.fingerprint())?;
        if let Some(why) = self
            .shared
            .as_ref()
            .and_then(|sh| sh.untied(&state.particles))
        {
            return Err(Error::Checkpoint(format!(
                "{} does not fit this engine: {why}",
                path.display()
            )));
        }
        Ok(state)
    }

    fn step(&self, state: &mut State, rows: Option<&[usize]>) -> Result<StepInfo> {
        let st = &self.settings;
        self.particles().check(state)?;
        let result = self.force(state, rows).map(|(phi, elbo)| {
            let loss = phi.frobenius_norm();
            (phi.into_vec(), loss, elbo)
        });
        if st.scale_lr_factor == 1.0 {
            return engine::apply_ascent(state, &st.optimizer, st.on_non_finite, result);
        }
        // ρ moves by the factor times the optimizer's step: ρ ← ρ₀ + c·(ρ₁ − ρ₀).
        let d = self.model.dim();
        let before: Vec<f64> = state
            .particles
            .as_slice()
            .chunks(state.particles.cols())
            .flat_map(|row| row[d..2 * d].iter().copied())
            .collect();
        let info = engine::apply_ascent(state, &st.optimizer, st.on_non_finite, result)?;
        let cols = state.particles.cols();
        let c = st.scale_lr_factor;
        for (row, old) in state
            .particles
            .as_mut_slice()
            .chunks_mut(cols)
            .zip(before.chunks(d))
        {
            for (r, r0) in row[d..2 * d].iter_mut().zip(old) {
                *r = r0 + c * (*r - r0);
            }
        }
        Ok(info)
    }
}

/// φ of a structured guide, whose kernel saw the first columns of the particles (loc and ρ):
/// the attraction Σ_i k(ψ_i, ψ_ℓ) ĝ_i on every column (one ĝ per target with per-pair
/// gradients), the repulsion on the columns the kernel saw.
///
/// # Errors
/// [`Error::Unsupported`] for a kernel whose weights are not one number per pair (vector-mode
/// and per-block kernels: their weights are per coordinate of the columns they saw).
fn viewed_direction(
    gram: &crate::kernel::Gram,
    ghats: &[Matrix],
    c_att: f64,
    c_rep: f64,
) -> Result<Matrix> {
    if gram.weights.scalar(0, 0).is_none() {
        return Err(Error::Unsupported(
            "the low-rank and full-rank guides need a kernel with one weight per pair of \
             particles (rbf, imq, linear, ...); vector-mode and per-block kernels weigh each \
             coordinate of loc and ρ and have no weight for the factor"
                .into(),
        ));
    }
    let m = ghats[0].rows();
    let mut phi = gram.weights.attract(&ghats[0]);
    // per-pair gradients: target ℓ takes its row of the attraction of its own ĝ
    for (l, g) in ghats.iter().enumerate().skip(1) {
        let a = gram.weights.attract(g);
        phi.row_mut(l).copy_from_slice(a.row(l));
    }
    let seen = gram.repulsion.cols();
    for l in 0..m {
        let rep = gram.repulsion.row(l);
        for (c, f) in phi.row_mut(l).iter_mut().enumerate() {
            *f *= c_att;
            if c < seen {
                *f += c_rep * rep[c];
            }
        }
    }
    Ok(phi)
}

/// The particles of the double-transformed mixture denominator (docs/algorithms.md §2.9): each
/// row [loc | ρ] becomes [loc | softplus(ρ)], whose scale softplus(softplus(ρ)) = softplus(σ)
/// is what NumPyro 0.16–0.22 puts in the denominator.
fn double_transformed(particles: &Matrix) -> Matrix {
    let mut out = particles.clone();
    let d = particles.cols() / 2;
    for i in 0..out.rows() {
        for r in &mut out.row_mut(i)[d..] {
            *r = crate::model::softplus(*r);
        }
    }
    out
}

/// ĝ (m×2d, rows [loc | ρ] of `particles`) as NumPyro before #1883 applied it
/// (docs/algorithms.md §2.11): the gradient with respect to σ = softplus(ρ), ∂/∂σ =
/// (∂/∂ρ)/sigmoid(ρ) = (∂/∂ρ)·(1 + e^(−ρ)), in place of the one with respect to ρ.
fn without_chain_rule(particles: &Matrix, ghat: &mut Matrix) {
    let d = particles.cols() / 2;
    for i in 0..ghat.rows() {
        let rho = &particles.row(i)[d..];
        for (g, r) in ghat.row_mut(i)[d..].iter_mut().zip(rho) {
            *g *= 1.0 + (-r).exp();
        }
    }
}

/// K·d values of a step (and m·p of the particles) from which its independent parts run side
/// by side: below it the rayon hand-off costs more than it saves (SVGD and MAP steps of a few
/// microseconds).
const PAR_JOIN_VALUES: usize = 1 << 16;

/// `(a(), b())`, side by side on the thread pool when `par`, else one after the other.
fn join_if<A, B, RA, RB>(par: bool, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if par {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

/// Checks that the buffers of a step on a model of dimension `d` have sizes that fit the address
/// space: the m×p particles, the kernel's m×m×p gradients, the K×d draws (K = m·S, or m²·S with
/// per-pair gradients), the Normal guide's K×m mixture densities and the K·b batch rows.
///
/// # Errors
/// [`Error::InvalidSettings`] naming `num_particles`, `num_elbo_particles` or `batch_size`.
fn check_sizes(d: usize, st: &SteinSettings) -> Result<()> {
    let (m, s) = (st.num_particles, st.num_elbo_particles);
    let groups = match st.gradient_reuse {
        crate::GradientReuse::Shared => 1,
        crate::GradientReuse::PerPair => m,
    };
    let per_param = st.guide.param_dim(1);
    engine::buffer_len("num_particles", "the m×p particles", &[m, per_param, d])?;
    engine::buffer_len(
        "num_particles",
        "the kernel's m×m×p gradients",
        &[m, m, per_param, d],
    )?;
    engine::buffer_len(
        "num_elbo_particles",
        "the K×d parameter draws of a step",
        &[groups, m, s, d],
    )?;
    if st.guide.is_normal() {
        engine::buffer_len(
            "num_elbo_particles",
            "the K×m mixture densities of a step",
            &[groups, m, s, m],
        )?;
    }
    if let Some(b) = st.batch_size {
        engine::buffer_len(
            "batch_size",
            "the K·b mini-batch rows of a step",
            &[groups, m, s, b],
        )?;
    }
    probe_kernel_matrices(m)
}

/// Refuses an `m` whose m × m kernel matrices (a step holds about four: k(x_i, x_j), its
/// gradient weights, the attraction's packed copy, the squared distances) the allocator will
/// not give, so that it is an error here rather than an allocation abort at the first step. A
/// probe: the space is reserved and released at once, nothing is written. Where the system
/// promises more memory than it has (Linux with `vm.overcommit_memory = 1`), a probe passes
/// that the step may not; front ends that know the machine's memory check it themselves
/// (`smi fit`, `smi bench`).
fn probe_kernel_matrices(m: usize) -> Result<()> {
    let values = m.checked_mul(m).and_then(|v| v.checked_mul(4));
    let fits = values.is_some_and(|n| Vec::<f64>::new().try_reserve_exact(n).is_ok());
    if fits {
        Ok(())
    } else {
        Err(Error::invalid(
            "num_particles",
            format!(
                "{m} particles: the kernel's m × m matrices (4 × {m} × {m} values of 8 bytes) \
                 cannot be allocated; use fewer particles"
            ),
        ))
    }
}
