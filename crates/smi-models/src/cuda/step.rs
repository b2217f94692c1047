//! `CudaStep`: the per-particle ELBO gradients ĝ of one SMI step on the device, for the Normal
//! guide and a built-in BNN (docs/algorithms.md §2.2).
//!
//! In: the m×p particles (copied to the device as `f32`) and two seeds. On the device: ε
//! (K×d, Philox) and the mini-batch rows (K×b, a keyed permutation per draw), θ = loc + σ⊙ε,
//! the network's log density and gradient for all K = m·S draws, the mixture density
//! log q_mix(θ_k) with its responsibilities, and the pull-back of τ∇log p − ∇log q_mix to the
//! particles. Out: ĝ (m×p, `f64`) and the K values of log p and log q_mix. Nothing of size
//! K×d or K×b crosses PCIe.

use cudarc::driver::{CudaSlice, PinnedHostSlice, PushKernelArg};
use rayon::prelude::*;
use smi::{Error, Matrix, Result};

use super::context::{grid, int, reduce_grid, Gpu, Kernel};
use super::error::{CallContext, CudaError};
use super::net::{upload_indices, zeros, Net, RowLayout};
use super::philox::feistel_half_bits;
use crate::{BnnClassifier, BnnRegression};

/// Which data rows the draws of a step are evaluated on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepRows<'a> {
    /// A separate mini-batch of `size` rows for every draw, drawn on the device from `seed`
    /// (the UCI setting; the full data when `size` ≥ N). Regression only.
    Sample {
        /// The key of the rows' permutations.
        seed: u64,
        /// b, rows per draw.
        size: usize,
    },
    /// The same rows for every draw, scale N/len (MNIST's epoch batches).
    Shared(&'a [usize]),
    /// Every row, scale 1.
    All,
}

/// What [`CudaStep::run`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct StepOutput {
    /// ĝ, m×p: row i is (1/S) Σ_s (∂θ_s/∂ψ_i)ᵀ [τ∇log p(θ_s) − ∇log q_mix(θ_s)].
    pub ghat: Matrix,
    /// log p of the K = m·S draws (draw i·S + s is draw s of particle i).
    pub logp: Vec<f64>,
    /// log q_mix of the K draws.
    pub logq: Vec<f64>,
}

/// Device buffers of a step of m particles and K draws.
pub(super) struct Buffers {
    pub(super) m: usize,
    pub(super) k: usize,
    pub(super) parts: CudaSlice<f32>,
    pub(super) sigma: CudaSlice<f32>,
    pub(super) inv_var: CudaSlice<f32>,
    pub(super) log_sigma: CudaSlice<f32>,
    pub(super) eps: CudaSlice<f32>,
    pub(super) theta: CudaSlice<f32>,
    pub(super) grad: CudaSlice<f32>,
    pub(super) logp: CudaSlice<f64>,
    pub(super) logq: CudaSlice<f64>,
    pub(super) comp: CudaSlice<f64>,
    pub(super) resp: CudaSlice<f32>,
    pub(super) ghat: CudaSlice<f64>,
    /// Draw groups of the pull-back ([`pullback_groups`]).
    pub(super) groups: usize,
    /// The pull-back's per-group sums (groups×m×2d); none for one group, which writes ĝ.
    pub(super) part: Option<CudaSlice<f64>>,
    /// The particles in `f32`, staged in page-locked memory for the copy up (m×2d).
    pub(super) host_parts: PinnedHostSlice<f32>,
    /// ĝ staged in page-locked memory for the copy down (m×2d).
    pub(super) host_ghat: PinnedHostSlice<f64>,
}

/// The rows buffer and what it holds (so the full-data rows are uploaded once).
struct RowBuffer {
    rows: CudaSlice<i32>,
    /// `Some(k)`: every row, replicated for k draws (or once for a shared layout).
    all_for: Option<usize>,
}

/// The device side of an SMI step on a built-in BNN; see the module documentation.
pub struct CudaStep {
    pub(super) gpu: Gpu,
    pub(super) net: Net,
    pub(super) buffers: Option<Buffers>,
    rows: Option<RowBuffer>,
    /// The particles and optimizer state kept on the device (`resident.rs`).
    pub(super) resident: Option<super::resident::Resident>,
    /// Per-phase times when profiling is on.
    pub(super) profiler: super::profile::Profiler,
}

impl std::fmt::Debug for CudaStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaStep")
            .field("gpu", &self.gpu)
            .field("dim", &self.net.dim())
            .finish()
    }
}

impl CudaStep {
    /// The step of `model` on device `ordinal` (its data copied there once).
    ///
    /// # Errors
    /// From [`Gpu::new`]; [`CudaError::Call`] when the copies fail.
    pub fn regression(ordinal: usize, model: &BnnRegression) -> Result<Self> {
        let gpu = Gpu::new(ordinal)?;
        let net = Net::regression(&gpu, model)?;
        Ok(CudaStep::with(gpu, net))
    }

    /// The step of `model` on device `ordinal` (its data copied there once).
    ///
    /// # Errors
    /// As [`CudaStep::regression`].
    pub fn classifier(ordinal: usize, model: &BnnClassifier) -> Result<Self> {
        let gpu = Gpu::new(ordinal)?;
        let net = Net::classifier(&gpu, model)?;
        Ok(CudaStep::with(gpu, net))
    }

    fn with(gpu: Gpu, net: Net) -> Self {
        CudaStep {
            gpu,
            net,
            buffers: None,
            rows: None,
            resident: None,
            profiler: Default::default(),
        }
    }

    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// ĝ, log p and log q_mix of one step: `particles` (m×2d, Normal guide ψ = [loc | ρ]),
    /// S = `draws` draws per particle from noise stream `noise_seed`, on `rows`, with the
    /// log-Jacobian when `jacobian` and the likelihood tempered by `tau`. Waits for the GPU.
    ///
    /// # Errors
    /// [`Error::Shape`] for particles that are not m×2d; [`Error::Data`] for a row index out
    /// of range; [`CudaError::Unsupported`] for per-draw batches on the classifier;
    /// [`CudaError::Call`] for a failed launch, copy or allocation.
    pub fn run(
        &mut self,
        particles: &Matrix,
        draws: usize,
        noise_seed: u64,
        rows: StepRows<'_>,
        jacobian: bool,
        tau: f64,
    ) -> Result<StepOutput> {
        let d = self.net.dim();
        if particles.cols() != 2 * d || particles.rows() == 0 {
            return Err(Error::shape(
                "CudaStep particles (Normal guide: loc | ρ)",
                format!("m×{}", 2 * d),
                format!("{}×{}", particles.rows(), particles.cols()),
            ));
        }
        if draws == 0 {
            return Err(Error::invalid("num_elbo_particles", "must be at least 1"));
        }
        let m = particles.rows();
        let k = m * draws;
        self.buffers(m, k)?;
        let (gpu, b) = (&self.gpu, self.buffers.as_mut());
        let Some(b) = b else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        // the copies go through page-locked buffers (from pageable memory the driver stages
        // each copy itself): on an H200 with 2 host threads an MNIST step (m×2d = 795 100
        // values each way) went from 9.0 to 7.4 ms, with 16 threads no change was measurable
        let staged = b
            .host_parts
            .as_mut_slice()
            .ctx("waiting for the particles' staging buffer")?;
        to_f32(particles.as_slice(), staged);
        gpu.stream()
            .memcpy_htod(&b.host_parts, &mut b.parts)
            .ctx("copying the particles to the GPU")?;
        self.device_pass(m, draws, noise_seed, rows, jacobian, tau)?;
        let (gpu, b) = (&self.gpu, self.buffers.as_mut());
        let Some(b) = b else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let mut logp = vec![0.0; k];
        let mut logq = vec![0.0; k];
        let stream = gpu.stream();
        stream
            .memcpy_dtoh(&b.ghat, &mut b.host_ghat)
            .ctx("copying ĝ from the GPU")?;
        stream
            .memcpy_dtoh(&b.logp.slice(..k), &mut logp)
            .ctx("copying log p from the GPU")?;
        stream
            .memcpy_dtoh(&b.logq.slice(..k), &mut logq)
            .ctx("copying log q from the GPU")?;
        gpu.synchronize()?;
        self.profiler.phase(&self.gpu, "copies to the host")?;
        let Some(b) = self.buffers.as_mut() else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let ghat = b
            .host_ghat
            .as_slice()
            .ctx("waiting for ĝ's copy from the GPU")?
            .to_vec();
        Ok(StepOutput {
            ghat: Matrix::from_vec(m, 2 * d, ghat)?,
            logp,
            logq,
        })
    }

    /// The device part of a step on the `f32` particles already in the step buffers (m rows,
    /// K = m·`draws` draws): ε, θ, the network on the rows, log q_mix and ĝ into the buffers
    /// (`ghat`, `logp`, `logq`); queued on the stream, not waited for.
    ///
    /// # Errors
    /// As [`CudaStep::run`].
    pub(super) fn device_pass(
        &mut self,
        m: usize,
        draws: usize,
        noise_seed: u64,
        rows: StepRows<'_>,
        jacobian: bool,
        tau: f64,
    ) -> Result<()> {
        let d = self.net.dim();
        let k = m * draws;
        self.buffers(m, k)?;
        self.profiler.start(&self.gpu)?;
        let (n, scale) = self.rows(k, rows)?;
        self.profiler.phase(&self.gpu, "rows")?;
        let (gpu, net, prof) = (&self.gpu, &mut self.net, &mut self.profiler);
        let (Some(b), Some(rb)) = (self.buffers.as_mut(), self.rows.as_ref()) else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let (mm, dd, kk, ss) = (int(m, "m")?, int(d, "d")?, int(k, "K")?, int(draws, "S")?);
        let mut l = gpu.launch(Kernel::GuideCoeffs);
        l.arg(&b.parts)
            .arg(&mm)
            .arg(&dd)
            .arg(&mut b.sigma)
            .arg(&mut b.inv_var)
            .arg(&mut b.log_sigma);
        // SAFETY: parts holds m×2d values, the outputs m×d.
        unsafe { l.launch(grid(m * d)?) }.ctx("guide_coeffs")?;
        let mut l = gpu.launch(Kernel::SampleTheta);
        l.arg(&noise_seed)
            .arg(&b.parts)
            .arg(&b.sigma)
            .arg(&kk)
            .arg(&ss)
            .arg(&dd)
            .arg(&mut b.eps)
            .arg(&mut b.theta);
        // SAFETY: eps and theta hold K×d values; draw k reads particle k / S < m.
        unsafe { l.launch(grid(k * d)?) }.ctx("sample_theta")?;
        prof.phase(gpu, "noise and θ")?;
        net.log_density_and_grad(
            gpu,
            &b.theta,
            k,
            &rb.rows,
            n,
            scale,
            jacobian,
            &mut b.grad,
            &mut b.logp,
        )?;
        prof.phase(gpu, "network")?;
        let cfg = reduce_grid(k, m)?;
        let mut l = gpu.launch(Kernel::MixComponents);
        l.arg(&b.theta)
            .arg(&b.parts)
            .arg(&b.inv_var)
            .arg(&b.log_sigma)
            .arg(&mm)
            .arg(&dd)
            .arg(&mut b.comp);
        // SAFETY: one block per (draw, particle) over d coordinates; comp holds K×m values.
        unsafe { l.launch(cfg) }.ctx("mix_components")?;
        let mut l = gpu.launch(Kernel::MixResponsibilities);
        l.arg(&b.comp)
            .arg(&kk)
            .arg(&mm)
            .arg(&mut b.logq)
            .arg(&mut b.resp);
        // SAFETY: one thread per draw over its m components.
        unsafe { l.launch(grid(k)?) }.ctx("mix_responsibilities")?;
        prof.phase(gpu, "mixture density")?;
        let groups = int(b.groups, "draw groups")?;
        let mut l = gpu.launch(Kernel::Pullback);
        l.arg(&b.theta)
            .arg(&b.eps)
            .arg(&b.grad)
            .arg(&b.resp)
            .arg(&b.parts)
            .arg(&b.inv_var)
            .arg(&mm)
            .arg(&ss)
            .arg(&dd)
            .arg(&tau)
            .arg(&groups);
        // one group (MNIST) writes ĝ itself; more write their sums for pullback_finish
        match b.part.as_mut() {
            None => l.arg(&mut b.ghat),
            Some(part) => l.arg(part),
        };
        // SAFETY: one thread per (draw group, particle, coordinate); the output holds
        // groups×m×2d values (ĝ's m×2d for one group).
        unsafe { l.launch(grid(b.groups * m * d)?) }.ctx("pullback")?;
        let Some(part) = b.part.as_ref() else {
            prof.phase(gpu, "pull-back")?;
            return Ok(());
        };
        let mut l = gpu.launch(Kernel::PullbackFinish);
        l.arg(part)
            .arg(&b.parts)
            .arg(&mm)
            .arg(&ss)
            .arg(&dd)
            .arg(&groups)
            .arg(&mut b.ghat);
        // SAFETY: one thread per (particle, coordinate); ghat holds m×2d values.
        unsafe { l.launch(grid(m * d)?) }.ctx("pullback_finish")?;
        prof.phase(gpu, "pull-back")?;
        Ok(())
    }

    /// Switches the per-phase clock on (clearing earlier times) or off; on, every phase waits
    /// for the GPU, so steps run slower.
    pub fn set_profiling(&mut self, on: bool) {
        self.profiler.set(on);
    }

    /// The mean time of each phase of the steps since profiling was switched on.
    pub fn profile(&self) -> Vec<super::profile::PhaseTime> {
        self.profiler.report()
    }

    /// Ends a phase of host work or of queued GPU work (see [`CudaStep::set_profiling`]).
    ///
    /// # Errors
    /// A failed wait for the GPU.
    pub(crate) fn profile_phase(&mut self, name: &'static str) -> Result<()> {
        self.profiler.phase(&self.gpu, name)
    }

    /// The noise ε (K×d) of the last [`CudaStep::run`] (for tests and diagnostics: a K×d copy).
    ///
    /// # Errors
    /// [`CudaError::Unsupported`] before the first run; [`CudaError::Call`] if the copy fails.
    pub fn last_noise(&self) -> Result<Vec<f32>> {
        let Some(b) = self.buffers.as_ref() else {
            return Err(CudaError::Unsupported("no step has run yet".into()).into());
        };
        self.gpu
            .stream()
            .clone_dtoh(&b.eps)
            .ctx("copying ε from the GPU")
    }

    /// The row indices of the last [`CudaStep::run`]: K×b for per-draw batches, the shared
    /// rows otherwise (for tests and diagnostics).
    ///
    /// # Errors
    /// As [`CudaStep::last_noise`].
    pub fn last_rows(&self) -> Result<Vec<usize>> {
        let Some(r) = self.rows.as_ref() else {
            return Err(CudaError::Unsupported("no step has run yet".into()).into());
        };
        let v = self
            .gpu
            .stream()
            .clone_dtoh(&r.rows)
            .ctx("copying the rows from the GPU")?;
        Ok(v.into_iter()
            .map(|i| usize::try_from(i).unwrap_or(0))
            .collect())
    }

    pub(super) fn buffers(&mut self, m: usize, k: usize) -> Result<()> {
        if self.buffers.as_ref().is_some_and(|b| b.m == m && b.k == k) {
            return Ok(());
        }
        self.buffers = None;
        let (g, d) = (&self.gpu, self.net.dim());
        let groups = pullback_groups(m, d, k / m.max(1));
        self.buffers = Some(Buffers {
            m,
            k,
            parts: zeros(g, m * 2 * d, "the particles")?,
            sigma: zeros(g, m * d, "the guide scales")?,
            inv_var: zeros(g, m * d, "the guide precisions")?,
            log_sigma: zeros(g, m * d, "the guide log-scales")?,
            eps: zeros(g, k * d, "the noise")?,
            theta: zeros(g, k * d, "the draws")?,
            grad: zeros(g, k * d, "the gradients")?,
            logp: zeros(g, k, "the log densities")?,
            logq: zeros(g, k, "the mixture densities")?,
            comp: zeros(g, k * m, "the mixture components")?,
            resp: zeros(g, k * m, "the responsibilities")?,
            ghat: zeros(g, m * 2 * d, "ĝ")?,
            groups,
            part: if groups > 1 {
                Some(zeros(
                    g,
                    groups * m * 2 * d,
                    "the pull-back's partial sums",
                )?)
            } else {
                None
            },
            host_parts: g.pinned_upload(m * 2 * d, "the particles")?,
            host_ghat: g.pinned_download(m * 2 * d, "ĝ")?,
        });
        Ok(())
    }

    /// Fills the rows buffer for K draws; returns (rows per draw, likelihood scale).
    fn rows(&mut self, k: usize, rows: StepRows<'_>) -> Result<(usize, f64)> {
        let big_n = self.net.num_data();
        let layout = self.net.row_layout();
        let rows = match rows {
            StepRows::Sample { size, .. } if size >= big_n => StepRows::All,
            StepRows::Sample { size: 0, .. } => {
                return Err(Error::invalid("batch_size", "must be at least 1"))
            }
            r => r,
        };
        match rows {
            StepRows::Sample { seed, size } => {
                if layout == RowLayout::Shared {
                    return Err(CudaError::Unsupported(
                        "per-draw mini-batches on the classifier (pass shared rows, as the \
                         MNIST runs do)"
                            .into(),
                    )
                    .into());
                }
                let len = k * size;
                if self
                    .rows
                    .as_ref()
                    .is_none_or(|r| r.rows.len() < len || r.all_for.is_some())
                {
                    self.rows = Some(RowBuffer {
                        rows: zeros(&self.gpu, len, "the batch rows")?,
                        all_for: None,
                    });
                }
                let Some(rb) = self.rows.as_mut() else {
                    return Err(CudaError::Unsupported("internal: no rows buffer".into()).into());
                };
                let (kk, bb, nn) = (int(k, "K")?, int(size, "b")?, int(big_n, "N")?);
                let half = int(feistel_half_bits(nn.unsigned_abs()) as usize, "bits")?;
                let mut l = self.gpu.launch(Kernel::SampleRows);
                l.arg(&seed)
                    .arg(&kk)
                    .arg(&bb)
                    .arg(&nn)
                    .arg(&half)
                    .arg(&mut rb.rows);
                // SAFETY: rows holds at least K×b values; 2 ≤ b < N here.
                unsafe { l.launch(grid(len)?) }.ctx("sample_rows")?;
                Ok((size, big_n as f64 / size as f64))
            }
            StepRows::Shared(r) => {
                if let Some(&bad) = r.iter().find(|&&i| i >= big_n) {
                    return Err(Error::Data(format!(
                        "batch row {bad} is out of range: the model has {big_n} rows"
                    )));
                }
                let host: Vec<usize> = match layout {
                    RowLayout::Shared => r.to_vec(),
                    RowLayout::PerDraw => r.iter().copied().cycle().take(k * r.len()).collect(),
                };
                // every MNIST step brings new rows: into the buffer of the last step when it
                // is a shared-rows buffer of the same length (no allocation per step)
                match self.rows.as_mut() {
                    Some(rb) if rb.all_for.is_none() && rb.rows.len() == host.len().max(1) => {
                        let ints = host
                            .iter()
                            .map(|&i| int(i, "the batch rows"))
                            .collect::<Result<Vec<i32>>>()?;
                        self.gpu
                            .stream()
                            .memcpy_htod(&ints, &mut rb.rows)
                            .ctx("copying the batch rows to the GPU")?;
                    }
                    _ => {
                        let rows = upload_indices(&self.gpu, &host, "the batch rows")?;
                        self.rows = Some(RowBuffer {
                            rows,
                            all_for: None,
                        });
                    }
                }
                Ok((r.len(), big_n as f64 / r.len().max(1) as f64))
            }
            StepRows::All => {
                let key = match layout {
                    RowLayout::Shared => 1,
                    RowLayout::PerDraw => k,
                };
                if self.rows.as_ref().is_none_or(|r| r.all_for != Some(key)) {
                    let host: Vec<usize> = (0..key).flat_map(|_| 0..big_n).collect();
                    let rows = upload_indices(&self.gpu, &host, "the batch rows")?;
                    self.rows = Some(RowBuffer {
                        rows,
                        all_for: Some(key),
                    });
                }
                Ok((big_n, 1.0))
            }
        }
    }
}

/// `dst[i] = src[i] as f32`, in parallel blocks for long slices (m×2d is 795 100 at MNIST).
fn to_f32(src: &[f64], dst: &mut [f32]) {
    const BLOCK: usize = 1 << 15;
    dst.par_chunks_mut(BLOCK)
        .zip(src.par_chunks(BLOCK))
        .for_each(|(d, s)| {
            for (d, &s) in d.iter_mut().zip(s) {
                *d = s as f32;
            }
        });
}

/// Threads the pull-back aims for (H100/H200: 132 streaming multiprocessors × 2 048 resident
/// threads ≈ 270 000; half of that is a choice, not yet measured against other counts).
const PULLBACK_THREADS: usize = 1 << 17;

/// Draw groups of the pull-back for m particles of d coordinates and S draws each: enough
/// groups that groups·m·d reaches [`PULLBACK_THREADS`], at most S (boston: m·d = 13 260,
/// 10 groups of 10 draws; MNIST: m·d = 397 550, one group).
pub(super) fn pullback_groups(m: usize, d: usize, s: usize) -> usize {
    PULLBACK_THREADS.div_ceil((m * d).max(1)).clamp(1, s.max(1))
}
