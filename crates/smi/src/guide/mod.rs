//! Guides q(θ|ψ): the family each particle ψ parameterises (docs/algorithms.md §2.1, §2.5).
//!
//! Three families: the mean-field [`normal`] guide (AutoNormal: ψ = [loc | ρ], σ = softplus(ρ)),
//! the [`lowrank`] Normal (ψ = [loc | ρ | V], Σ = S(I + VVᵀ)S), the [`fullrank`] Normal
//! (ψ = [loc | ρ | strictly lower L], Σ = LLᵀ) and the point-mass [`delta`] guide
//! (AutoDelta: ψ = θ). Particles are stored unconstrained, one per
//! row of an m×p [`Matrix`].

pub(crate) mod delta;
pub(crate) mod fullrank;
pub(crate) mod lowrank;
pub(crate) mod mixture;
mod noise;
pub(crate) mod normal;
mod start;
mod structured;

pub(crate) use noise::NoiseKey;

/// One particle's SMI directions δ_s = τ·`grad`_s − `gradq`_s over its S draws (S×d each),
/// with the draws' noise `eps` (S rows of the guide's noise dimension): what the pull-backs
/// read, formed on the fly instead of stored.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Directions<'a> {
    /// The S noise rows.
    pub eps: &'a [f64],
    /// ∇ log p at the S draws (S×d).
    pub grad: &'a [f64],
    /// ∇ log q_mix at the S draws (S×d).
    pub gradq: &'a [f64],
    /// τ, the likelihood temperature's factor on `grad`.
    pub tau: f64,
}

impl<'a> Directions<'a> {
    /// Stored directions `delta` (S×d): τ = 1 against a zero `gradq` (which must have
    /// `delta`'s length).
    pub(crate) fn stored(eps: &'a [f64], delta: &'a [f64], zeros: &'a [f64]) -> Self {
        Directions {
            eps,
            grad: delta,
            gradq: zeros,
            tau: 1.0,
        }
    }
}

/// Columns `c0 .. c0 + loc.len()` of a pull-back: the ∂/∂loc entries into `loc`, the ∂/∂ρ
/// entries into `rho` (the same length; empty for Delta).
#[derive(Debug)]
pub(crate) struct Columns<'a> {
    /// The first column.
    pub c0: usize,
    /// ∂/∂loc of the columns.
    pub loc: &'a mut [f64],
    /// ∂/∂ρ of the columns.
    pub rho: &'a mut [f64],
}

use rand::Rng;
use rand_distr::Distribution;
use serde::{Deserialize, Serialize};
pub use start::Start;

use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::inv_softplus;
use crate::model::Layout;
use crate::model::LogDensity;

/// The sd·√rank of the low-rank guide's initial factor entries (dimensionless: V is relative
/// to the scales).
const LOW_RANK_INIT_FACTOR: f64 = 0.1;

/// Which guide family each particle parameterises.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GuideSettings {
    /// Mean-field Normal: θ ~ N(loc, softplus(ρ)²) per coordinate; p = 2d.
    Normal {
        /// Initial σ of every coordinate (default 0.1, stored as ρ = ln(e^0.1 − 1)).
        init_scale: f64,
    },
    /// Low-rank-plus-diagonal Normal (docs/algorithms.md §2.12): θ = loc + σ ⊙ (ε + V η) with
    /// σ = softplus(ρ), V of d × `rank`, so Σ = S(I + VVᵀ)S with S = diag(σ) (the factor
    /// W = SV stored relative to the scales); p = d(2 + rank).
    LowRank {
        /// Initial σ of every coordinate (default 0.1); V starts at N(0, 0.1²/rank) entries.
        init_scale: f64,
        /// r ≥ 1, the columns of W.
        rank: usize,
    },
    /// Full-rank Normal (docs/algorithms.md §2.12): θ = loc + L ε with L lower triangular,
    /// diagonal σ = softplus(ρ) and free entries below it, so Σ = LLᵀ (the Cholesky
    /// factor); p = 2d + d(d − 1)/2. For small d: a draw's density costs O(d²) per component.
    FullRank {
        /// Initial σ of every coordinate (default 0.1); the entries below the diagonal start
        /// at 0.
        init_scale: f64,
    },
    /// Point mass at ψ; p = d.
    Delta,
}

impl Default for GuideSettings {
    fn default() -> Self {
        GuideSettings::normal()
    }
}

/// How the initial location of each particle is drawn (docs/algorithms.md §2.5). Every particle draws its own.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Init {
    /// Uniform(−radius, radius) in each unconstrained coordinate (NumPyro's init_to_uniform;
    /// default radius 2).
    Uniform {
        /// r > 0.
        radius: f64,
    },
    /// The element-wise median of `draws` prior draws (NumPyro's init_to_median, 15 draws)
    /// from [`LogDensity::sample_prior`]. A model that cannot sample its prior (its
    /// `sample_prior` returns [`Error::Unsupported`], the default) gets Uniform(−2, 2) in each
    /// unconstrained coordinate instead ([`Init::FALLBACK_RADIUS`]), as NumPyro's init_to_median
    /// falls back to init_to_uniform; any other error of `sample_prior` is returned.
    PriorMedian {
        /// Number of prior draws.
        draws: usize,
    },
}

impl Default for Init {
    fn default() -> Self {
        Init::Uniform { radius: 2.0 }
    }
}

impl Init {
    /// The radius of the uniform initialisation that [`Init::PriorMedian`] falls back to for a
    /// model that cannot sample its prior (NumPyro's init_to_uniform default, 2).
    pub const FALLBACK_RADIUS: f64 = 2.0;

    /// Checks the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for a radius ≤ 0 (identical particles break the kernel) or so
    /// large that the interval's width 2·radius is not finite, or zero draws.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Init::Uniform { radius } if !(radius.is_finite() && radius > 0.0) => Err(Error::invalid(
                "init radius",
                format!("must be positive and finite (identical particles break the kernel), got {radius}"),
            )),
            Init::Uniform { radius } if !(2.0 * radius).is_finite() => Err(Error::invalid(
                "init radius",
                format!("must be at most {:e} (the width 2·radius must be finite), got {radius}", f64::MAX / 2.0),
            )),
            Init::PriorMedian { draws: 0 } => {
                Err(Error::invalid("init draws", "needs at least one prior draw"))
            }
            _ => Ok(()),
        }
    }

    /// Writes one initial location (length d) into `out`.
    ///
    /// # Errors
    /// From [`Init::validate`]; from [`LogDensity::sample_prior`] for `PriorMedian` (except
    /// [`Error::Unsupported`], which falls back to the uniform init), and
    /// [`Error::InvalidSettings`] when its `draws × d` buffer cannot be allocated.
    pub fn draw<M: LogDensity + ?Sized>(
        &self,
        model: &M,
        rng: &mut rand_chacha::ChaCha8Rng,
        out: &mut [f64],
    ) -> Result<()> {
        self.validate()?;
        match *self {
            Init::Uniform { radius } => uniform(radius, rng, out),
            Init::PriorMedian { draws } => {
                let d = out.len();
                if d == 0 {
                    return Ok(());
                }
                let mut all = draws
                    .checked_mul(d)
                    .ok_or_else(|| {
                        Error::shape("prior draws", "draws × d within usize", "an overflow")
                    })
                    .and_then(|n| crate::matrix::try_zeros_vec(n, "the prior draws"))
                    .map_err(|e| {
                        Error::invalid(
                            "init draws",
                            format!("{draws} prior draws of {d} values cannot be stored: {e}"),
                        )
                    })?;
                for row in all.chunks_exact_mut(d) {
                    match model.sample_prior(rng, row) {
                        Ok(()) => {}
                        Err(Error::Unsupported(_)) => {
                            uniform(Init::FALLBACK_RADIUS, rng, out);
                            return Ok(());
                        }
                        Err(e) => return Err(e),
                    }
                }
                let mut col = vec![0.0; draws];
                for (c, o) in out.iter_mut().enumerate() {
                    for (s, v) in col.iter_mut().enumerate() {
                        *v = all[s * d + c];
                    }
                    col.sort_by(f64::total_cmp);
                    *o = if draws % 2 == 1 {
                        col[draws / 2]
                    } else {
                        0.5 * (col[draws / 2 - 1] + col[draws / 2])
                    };
                }
            }
        }
        Ok(())
    }
}

/// Uniform(−radius, radius) in each coordinate of `out` (NumPyro's init_to_uniform).
fn uniform(radius: f64, rng: &mut rand_chacha::ChaCha8Rng, out: &mut [f64]) {
    for o in out.iter_mut() {
        *o = rng.random_range(-radius..radius);
    }
}

impl GuideSettings {
    /// The Normal guide with NumPyro's default init scale 0.1.
    pub fn normal() -> Self {
        GuideSettings::Normal { init_scale: 0.1 }
    }

    /// The low-rank Normal guide of `rank` columns, init scale 0.1.
    pub fn low_rank(rank: usize) -> Self {
        GuideSettings::LowRank {
            init_scale: 0.1,
            rank,
        }
    }

    /// The full-rank Normal guide, init scale 0.1.
    pub fn full_rank() -> Self {
        GuideSettings::FullRank { init_scale: 0.1 }
    }

    /// The guide named by `spec`: `normal` (mean-field), `lowrank:R` (rank R), `fullrank` or
    /// `delta`; case-insensitive.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (field `guide`) for any other name or a rank that is not a
    /// positive integer.
    pub fn from_spec(spec: &str) -> Result<Self> {
        let s = spec.trim().to_ascii_lowercase();
        let bad = |why: String| Error::invalid("guide", why);
        match s.as_str() {
            "normal" | "meanfield" | "mean-field" => Ok(GuideSettings::normal()),
            "fullrank" | "full-rank" => Ok(GuideSettings::full_rank()),
            "delta" => Ok(GuideSettings::Delta),
            _ => match s.strip_prefix("lowrank:").or(s.strip_prefix("low-rank:")) {
                Some(r) => match r.trim().parse::<usize>() {
                    Ok(rank) if rank >= 1 => Ok(GuideSettings::low_rank(rank)),
                    _ => Err(bad(format!(
                        "the rank in {spec:?} must be a positive integer"
                    ))),
                },
                None => Err(bad(format!(
                    "unknown guide {spec:?}; valid: normal, lowrank:R, fullrank, delta"
                ))),
            },
        }
    }

    /// The guide's name: `normal`, `lowrank:R`, `fullrank` or `delta`.
    pub fn name(&self) -> String {
        match self {
            GuideSettings::Normal { .. } => "normal".into(),
            GuideSettings::FullRank { .. } => "fullrank".into(),
            GuideSettings::LowRank { rank, .. } => format!("lowrank:{rank}"),
            GuideSettings::Delta => "delta".into(),
        }
    }

    /// Whether the guide is a Normal of either kind (it has a density and a scale).
    pub fn is_normal(&self) -> bool {
        !matches!(self, GuideSettings::Delta)
    }

    /// Checks the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for a non-positive init scale or a zero rank.
    pub fn validate(&self) -> Result<()> {
        let init_scale = match *self {
            GuideSettings::Normal { init_scale } | GuideSettings::FullRank { init_scale } => {
                init_scale
            }
            GuideSettings::LowRank { init_scale, rank } => {
                if rank == 0 {
                    return Err(Error::invalid("rank", "the low-rank guide needs rank ≥ 1"));
                }
                init_scale
            }
            GuideSettings::Delta => return Ok(()),
        };
        if !(init_scale.is_finite() && init_scale > 0.0) {
            return Err(Error::invalid(
                "init_scale",
                format!("must be positive and finite, got {init_scale}"),
            ));
        }
        Ok(())
    }

    /// p, the number of guide parameters per particle for a model of dimension d (saturating).
    pub fn param_dim(&self, d: usize) -> usize {
        match self {
            GuideSettings::Normal { .. } => 2 * d,
            GuideSettings::LowRank { rank, .. } => d.saturating_mul(rank.saturating_add(2)),
            GuideSettings::FullRank { .. } => fullrank::param_dim(d),
            GuideSettings::Delta => d,
        }
    }

    /// p as [`GuideSettings::param_dim`], `None` when it overflows.
    pub fn checked_param_dim(&self, d: usize) -> Option<usize> {
        match self {
            GuideSettings::Normal { .. } => d.checked_mul(2),
            GuideSettings::LowRank { rank, .. } => d.checked_mul(rank.checked_add(2)?),
            GuideSettings::FullRank { .. } => fullrank::checked_param_dim(d),
            GuideSettings::Delta => Some(d),
        }
    }

    /// Number of standard-normal noise values per draw (d for Normal and full-rank, d + r for
    /// low-rank, 0 for Delta).
    pub fn noise_dim(&self, d: usize) -> usize {
        match self {
            GuideSettings::Normal { .. } | GuideSettings::FullRank { .. } => d,
            GuideSettings::LowRank { rank, .. } => d + rank,
            GuideSettings::Delta => 0,
        }
    }

    /// The particle columns past loc and ρ (the factor) that belong to the model columns
    /// `c0 .. c0 + w`, relative to the factor's first column: rows of V (low-rank), rows of
    /// L's strictly lower triangle (full-rank); empty for the other guides.
    pub(crate) fn factor_cols(&self, c0: usize, w: usize) -> std::ops::Range<usize> {
        match self {
            GuideSettings::LowRank { rank, .. } => c0 * rank..(c0 + w) * rank,
            GuideSettings::FullRank { .. } => fullrank::tri(c0)..fullrank::tri(c0 + w),
            GuideSettings::Normal { .. } | GuideSettings::Delta => 0..0,
        }
    }

    /// The particle columns (of p = `param_dim(d)`) that parameterise the model columns
    /// `theta_cols` (each < d), in the particle's order: the same columns for Delta; for Normal
    /// the locs `theta_cols`, then the ρ columns `d + theta_cols`; for low-rank those, then the
    /// rows of W of `theta_cols`.
    pub fn param_columns(&self, theta_cols: &[usize], d: usize) -> Vec<usize> {
        match self {
            GuideSettings::Normal { .. } => theta_cols
                .iter()
                .copied()
                .chain(theta_cols.iter().map(|c| d + c))
                .collect(),
            GuideSettings::LowRank { rank, .. } => theta_cols
                .iter()
                .copied()
                .chain(theta_cols.iter().map(|c| d + c))
                .chain(
                    theta_cols
                        .iter()
                        .flat_map(|c| (0..*rank).map(move |k| 2 * d + c * rank + k)),
                )
                .collect(),
            GuideSettings::FullRank { .. } => {
                // every row of L in the columns' range (a row couples to all earlier columns)
                let mut cols: Vec<usize> = theta_cols
                    .iter()
                    .copied()
                    .chain(theta_cols.iter().map(|c| d + c))
                    .collect();
                for &c in theta_cols {
                    cols.extend((0..c).map(|j| 2 * d + fullrank::tri(c) + j));
                }
                cols
            }
            GuideSettings::Delta => theta_cols.to_vec(),
        }
    }

    /// Names of the particle's columns: `"<block>.loc"` then `"<block>.scale"` for Normal, the
    /// model's blocks for Delta.
    pub fn layout(&self, model_layout: &Layout) -> Layout {
        match self {
            GuideSettings::Normal { .. } => model_layout
                .suffixed(".loc", 0)
                .concat(&model_layout.suffixed(".scale", 0)),
            GuideSettings::LowRank { rank, .. } => model_layout
                .suffixed(".loc", 0)
                .concat(&model_layout.suffixed(".scale", 0))
                .concat(&model_layout.suffixed(".factor", 0).with_trailing_dim(*rank)),
            GuideSettings::FullRank { .. } => {
                let d = model_layout.dim();
                let mut lower = Layout::default();
                lower.push("scale_tril", vec![d * d.saturating_sub(1) / 2]);
                model_layout
                    .suffixed(".loc", 0)
                    .concat(&model_layout.suffixed(".scale", 0))
                    .concat(&lower)
            }
            // Particles live on the unconstrained space: blocks as columns, constraints dropped.
            GuideSettings::Delta => model_layout.suffixed("", 0),
        }
    }

    /// One particle: the initial location from `init`, and ρ = softplus⁻¹(init_scale); for the
    /// low-rank guide V's entries ~ N(0, 0.1²/rank), drawn after the location (V = 0 is a
    /// stationary point of the ELBO in V, which the gradient's noise alone leaves slowly), so
    /// the initial correlations are about ±0.01.
    ///
    /// # Errors
    /// From [`Init::draw`].
    pub fn init_particle<M: LogDensity + ?Sized>(
        &self,
        model: &M,
        init: &Init,
        rng: &mut rand_chacha::ChaCha8Rng,
        out: &mut [f64],
    ) -> Result<()> {
        let d = model.dim();
        init.draw(model, rng, &mut out[..d])?;
        match *self {
            GuideSettings::Normal { init_scale } => out[d..2 * d].fill(inv_softplus(init_scale)),
            GuideSettings::LowRank { init_scale, rank } => {
                out[d..2 * d].fill(inv_softplus(init_scale));
                let sd = LOW_RANK_INIT_FACTOR / (rank as f64).sqrt();
                for w in &mut out[2 * d..] {
                    let e: f64 = rand_distr::StandardNormal.sample(&mut *rng);
                    *w = sd * e;
                }
            }
            GuideSettings::FullRank { init_scale } => out[d..2 * d].fill(inv_softplus(init_scale)),
            GuideSettings::Delta => {}
        }
        Ok(())
    }

    /// Fills `eps` (rows of `row_len` values) with standard-normal noise (nothing for Delta).
    ///
    /// One 64-bit key is drawn from `rng` (`next_u64`; Normal only: Delta draws nothing); row
    /// k of `eps` is row k of the Philox4x32-10 normals under that key
    /// ([`crate::random::fill_normals`]: element i from the counter (i/4, k), the GPU
    /// backend's stream k to a few `f32` ulp; computed in `f32` arithmetic, for speed, and
    /// stored exactly as `f64`), so every row can be drawn on its own and the result depends
    /// only on `rng`'s state, not on the thread count. Large buffers are filled in parallel.
    pub fn draw_noise<R: Rng + ?Sized>(&self, rng: &mut R, eps: &mut [f64], row_len: usize) {
        if let Some(key) = self.noise_key(rng) {
            key.fill_rows(0, row_len, eps);
        }
    }

    /// The key of one step's noise, drawn from `rng` (see [`GuideSettings::draw_noise`]);
    /// `None`, and nothing drawn, for Delta.
    pub(crate) fn noise_key<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<NoiseKey> {
        match self {
            GuideSettings::Normal { .. }
            | GuideSettings::LowRank { .. }
            | GuideSettings::FullRank { .. } => Some(NoiseKey::draw(rng)),
            GuideSettings::Delta => None,
        }
    }

    /// Reparameterised draws from one particle: `theta` (S×d) from `psi` (p) and `eps`
    /// (S×noise_dim).
    pub fn sample(&self, psi: &[f64], eps: &[f64], theta: &mut [f64]) {
        match self {
            GuideSettings::Normal { .. } => normal::sample(psi, eps, theta),
            GuideSettings::LowRank { rank, .. } => lowrank::sample(psi, *rank, eps, theta),
            GuideSettings::FullRank { .. } => fullrank::sample(psi, eps, theta),
            GuideSettings::Delta => delta::sample(psi, theta),
        }
    }

    /// For K draws θ (K×d): `logq[k] = log((1/m) Σ_j q(θ_k|ψ_j))` and
    /// `grad[k] = ∇_θ log q_mix(θ_k)`, all particles held constant (stop-gradient). f64 throughout.
    /// For Delta the density is the constant −ln m with zero gradient (docs/algorithms.md §4.1).
    pub fn mixture_log_density(
        &self,
        particles: &Matrix,
        theta: &[f64],
        logq: &mut [f64],
        grad: &mut [f64],
    ) {
        match self {
            GuideSettings::Normal { .. } => {
                normal::mixture_log_density(particles, theta, logq, grad)
            }
            GuideSettings::LowRank { rank, .. } => {
                lowrank::mixture_log_density(particles, *rank, theta, logq, grad)
            }
            GuideSettings::FullRank { .. } => {
                fullrank::mixture_log_density(particles, theta, logq, grad)
            }
            GuideSettings::Delta => {
                logq.fill(-(particles.rows() as f64).ln());
                grad.fill(0.0);
            }
        }
    }

    /// Pulls per-draw directions δ_s = ∂ℓ/∂θ_s (S×d) back to the particle:
    /// `out = (1/S) Σ_s (∂θ_s/∂ψ)ᵀ δ_s` (length p). Normal: ∂/∂loc = mean δ,
    /// ∂/∂ρ = mean(δ⊙ε)⊙sigmoid(ρ); low-rank also ∂/∂W = mean(δ ηᵀ). Delta: mean δ.
    pub fn pullback(&self, psi: &[f64], eps: &[f64], delta: &[f64], out: &mut [f64]) {
        match self {
            GuideSettings::Normal { .. } => normal::pullback(psi, eps, delta, out),
            GuideSettings::LowRank { rank, .. } => lowrank::pullback(psi, *rank, eps, delta, out),
            GuideSettings::FullRank { .. } => fullrank::pullback(psi, eps, delta, out),
            GuideSettings::Delta => delta::pullback(delta, out),
        }
    }

    /// The columns `out` of [`GuideSettings::pullback`] for the directions `dirs` (d the
    /// model's dimension), formed on the fly: the loc (Delta: ψ) entries into `out.loc`, the ρ
    /// entries (empty for Delta) into `out.rho`, the rows `out.c0 ..` of W (low-rank) or of the
    /// triangle (full-rank; empty otherwise) into `out_factor`. Bit-identical to `pullback` on
    /// the stored δ.
    pub(crate) fn pullback_cols(
        &self,
        psi: &[f64],
        d: usize,
        dirs: &Directions,
        out: Columns,
        out_factor: &mut [f64],
    ) {
        match self {
            GuideSettings::Normal { .. } => normal::pullback_cols(psi, dirs, out),
            GuideSettings::LowRank { rank, .. } => {
                lowrank::pullback_cols(psi, *rank, dirs, out, out_factor)
            }
            GuideSettings::FullRank { .. } => fullrank::pullback_cols(psi, dirs, out, out_factor),
            GuideSettings::Delta => delta::pullback_cols(d, dirs, out.c0, out.loc),
        }
    }

    /// Adds ∇_ψ of the guide's entropy −E_q[log q] to `out` (OVI's full ELBO gradient; zero for
    /// Delta): ∂/∂ρ Σ log σ = sigmoid(ρ)/σ.
    pub fn add_entropy_grad(&self, psi: &[f64], out: &mut [f64]) {
        match self {
            GuideSettings::Normal { .. } => normal::add_entropy_grad(psi, out),
            GuideSettings::LowRank { rank, .. } => lowrank::add_entropy_grad(psi, *rank, out),
            GuideSettings::FullRank { .. } => fullrank::add_entropy_grad(psi, out),
            GuideSettings::Delta => {}
        }
    }

    /// The entropy of one particle's guide (Normal: Σ ln σ + d/2·ln(2πe); low-rank:
    /// ½ ln det Σ + d/2·ln(2πe); Delta: 0).
    pub fn entropy(&self, psi: &[f64]) -> f64 {
        match self {
            GuideSettings::Normal { .. } => normal::entropy(psi),
            GuideSettings::LowRank { rank, .. } => lowrank::entropy(psi, *rank),
            GuideSettings::FullRank { .. } => fullrank::entropy(psi),
            GuideSettings::Delta => 0.0,
        }
    }

    /// The location (loc for Normal, ψ for Delta) of a particle: its first d entries.
    pub fn loc<'a>(&self, psi: &'a [f64], d: usize) -> &'a [f64] {
        &psi[..d]
    }
}
