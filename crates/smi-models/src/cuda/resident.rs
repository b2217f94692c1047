//! The particles resident on the device: the RBF kernel's distances, the Stein direction φ,
//! the optimizer and the step's norm run on the GPU, beside the ELBO gradients of
//! [`CudaStep`], so that per step only m × m distances, the K log densities and a few scalars
//! cross PCIe (docs/cuda.md, "What runs where").
//!
//! The master copy of the particles (`f64`, m×p) and the optimizer's two buffers live on the
//! device; the network reads an `f32` copy that the optimizer's kernel writes after each
//! update. The host keeps the bandwidth (a median over m² values), the kernel's m×m weights,
//! the finite checks, the learning-rate schedule and the state's counters. A [`Mark`] says
//! which host state the device copy continues, so a state the device does not hold is
//! uploaded first and a state it holds is never uploaded again.

use cudarc::driver::{CudaSlice, PushKernelArg};
use smi::kernel::{bandwidth_from_squared_distances, BandwidthFactor};
use smi::rand::ChaCha8Rng;
use smi::{Error, Matrix, OptimizerSettings, OptimizerState, Result, State};

use super::context::{grid, int, reduce_grid, Kernel};
use super::error::{CallContext, CudaError};
use super::kernels::{BLOCK, REDUCE_BLOCK};
use super::net::zeros;
use super::step::{CudaStep, StepRows};

/// Columns per block of the pairwise-distance partial sums.
const CHUNK: usize = 8 * REDUCE_BLOCK as usize;

/// The most particles the device update takes (its distance kernel has a block per pair in
/// the grid's second dimension, at most 65 535).
pub const MAX_RESIDENT_PARTICLES: usize = 255;

/// The host state the device copy continues: its step counter and random-number generator
/// after the device's last step (a step draws two seeds from the generator, so another
/// state, or this one moved on by the host, does not match).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mark {
    step: u64,
    rng: ChaCha8Rng,
}

impl Mark {
    /// The mark of `state` as it is now.
    pub(crate) fn of(state: &State) -> Self {
        Mark {
            step: state.step,
            rng: state.rng.clone(),
        }
    }
}

/// The resident state: the particles, the optimizer's buffers and the update's scratch.
pub(crate) struct Resident {
    m: usize,
    p: usize,
    /// The particles (m×p, `f64`, row-major).
    x: CudaSlice<f64>,
    /// Optimizer buffer a (Adagrad Σg², Adam's m; zeros for SGD).
    a: CudaSlice<f64>,
    /// Optimizer buffer b (Adagrad's momentum, Adam's v).
    b: CudaSlice<f64>,
    /// φ of the current step (m×p).
    phi: CudaSlice<f64>,
    /// K, W (m×m each) and s (m), uploaded per step.
    coef: CudaSlice<f64>,
    /// Partial squared distances: m² pairs × column chunks.
    pair_partials: CudaSlice<f64>,
    /// Partial sums of φ², one per block of columns.
    norm_partials: CudaSlice<f64>,
    mark: Option<Mark>,
}

/// What the device's part of a resident step gives the host.
#[derive(Clone, Debug)]
pub(crate) struct ResidentOutput {
    /// log p of the K draws.
    pub logp: Vec<f64>,
    /// log q_mix of the K draws.
    pub logq: Vec<f64>,
    /// Squared distances of the particles (m×m, zero diagonal).
    pub sq: Matrix,
}

/// The optimizer update of one step in the device kernel's terms: `kind` and `h` as
/// `optimizer_step` in `kernels.rs` reads them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OptimizerCall {
    kind: i32,
    h: [f64; 5],
}

impl OptimizerCall {
    /// The kernel's `kind` and scalars (for the host mirror in the tests).
    #[cfg(test)]
    pub(crate) fn parts(&self) -> (i32, [f64; 5]) {
        (self.kind, self.h)
    }

    /// The update of `settings` at rate `lr`, with Adam's bias corrections from `state`'s step
    /// count (which this advances, as the host's Adam step does).
    ///
    /// # Errors
    /// [`Error::Checkpoint`] when the state's kind is not the settings'.
    pub(crate) fn prepare(
        settings: &OptimizerSettings,
        lr: f64,
        state: &mut OptimizerState,
    ) -> Result<Self> {
        match (state, *settings) {
            (OptimizerState::Adagrad(_), OptimizerSettings::Adagrad { momentum, .. }) => {
                Ok(OptimizerCall {
                    kind: 0,
                    h: [lr, momentum, 0.0, 0.0, 0.0],
                })
            }
            (
                OptimizerState::Adam(_),
                OptimizerSettings::Adam {
                    spike_guard: Some(_),
                    ..
                },
            ) => Err(Error::invalid(
                "spike_guard",
                "Adam's spike guard runs on the CPU only; the CUDA engine has none",
            )),
            (OptimizerState::Adam(s), OptimizerSettings::Adam { b1, b2, eps, .. }) => {
                let (step, inv_sqrt_c2) = s.advance(lr, b1, b2);
                Ok(OptimizerCall {
                    kind: 1,
                    h: [step, b1, b2, inv_sqrt_c2, eps],
                })
            }
            (OptimizerState::Sgd(_), OptimizerSettings::Sgd { .. }) => Ok(OptimizerCall {
                kind: 2,
                h: [lr, 0.0, 0.0, 0.0, 0.0],
            }),
            _ => Err(Error::Checkpoint(
                "optimizer state does not match the optimizer settings".into(),
            )),
        }
    }
}

/// The RBF kernel's coefficients on particles with squared distances `sq` (m×m), as
/// [`smi::kernel::RbfKernel`] in norm mode computes them: the median bandwidth h, then
/// K = exp(−sq/h), W = −(2/h)·K and s_ℓ = Σ_i W[i, ℓ], laid out as the device's
/// `stein_direction` reads them (K, W, s).
pub(crate) fn rbf_coefficients(sq: &Matrix, factor: BandwidthFactor) -> Vec<f64> {
    let m = sq.rows();
    let h = bandwidth_from_squared_distances(sq, factor);
    let k: Vec<f64> = sq.as_slice().iter().map(|v| (-v / h).exp()).collect();
    let w: Vec<f64> = k.iter().map(|v| v * (-2.0 / h)).collect();
    let s: Vec<f64> = (0..m).map(|l| (0..m).map(|i| w[i * m + l]).sum()).collect();
    let mut out = k;
    out.extend(w);
    out.extend(s);
    out
}

impl CudaStep {
    /// Whether the device holds `state` (it continues the state the device's last step left).
    pub(crate) fn holds(&self, state: &State) -> bool {
        self.resident
            .as_ref()
            .and_then(|r| r.mark.as_ref())
            .is_some_and(|mark| *mark == Mark::of(state))
    }

    /// Records that the device now holds `state` (after a step), or nothing (`None`).
    pub(crate) fn set_mark(&mut self, mark: Option<Mark>) {
        if let Some(r) = self.resident.as_mut() {
            r.mark = mark;
        }
    }

    /// Copies `state`'s particles and optimizer buffers to the device, for steps with `draws`
    /// draws per particle.
    ///
    /// # Errors
    /// [`Error::Shape`] for particles that are not m×2d or optimizer buffers of another
    /// length; [`CudaError::Call`] for a failed allocation or copy.
    pub(crate) fn upload_state(&mut self, state: &State, draws: usize) -> Result<()> {
        let (m, p) = (state.particles.rows(), state.particles.cols());
        let d = self.net.dim();
        if p != 2 * d || m == 0 {
            return Err(Error::shape(
                "CudaStep particles (Normal guide: loc | ρ)",
                format!("m×{}", 2 * d),
                format!("{m}×{p}"),
            ));
        }
        self.buffers(m, m * draws)?;
        if self.resident.as_ref().is_none_or(|r| r.m != m || r.p != p) {
            self.resident = None;
            let g = &self.gpu;
            let n = m * p;
            let chunks = p.div_ceil(CHUNK);
            self.resident = Some(Resident {
                m,
                p,
                x: zeros(g, n, "the particles (f64)")?,
                a: zeros(g, n, "the optimizer's first buffer")?,
                b: zeros(g, n, "the optimizer's second buffer")?,
                phi: zeros(g, n, "the Stein direction")?,
                coef: zeros(g, 2 * m * m + m, "the kernel's weights")?,
                pair_partials: zeros(g, m * m * chunks, "the distances' partial sums")?,
                norm_partials: zeros(g, p.div_ceil(REDUCE_BLOCK as usize), "the norm's sums")?,
                mark: None,
            });
        }
        let (gpu, Some(r), Some(bufs)) = (&self.gpu, self.resident.as_mut(), self.buffers.as_mut())
        else {
            return Err(CudaError::Unsupported("internal: no resident buffers".into()).into());
        };
        let n = m * p;
        let (a, b): (&[f64], &[f64]) = match &state.optimizer {
            OptimizerState::Adagrad(s) => (&s.g_sq, &s.n),
            OptimizerState::Adam(s) => (&s.m, &s.v),
            OptimizerState::Sgd(_) => (&[], &[]),
        };
        let stream = gpu.stream();
        stream
            .memcpy_htod(state.particles.as_slice(), &mut r.x)
            .ctx("copying the particles to the GPU")?;
        for (host, dev, what) in [(a, &mut r.a, "first"), (b, &mut r.b, "second")] {
            if host.is_empty() {
                stream
                    .memset_zeros(dev)
                    .ctx("clearing an optimizer buffer")?;
            } else if host.len() != n {
                return Err(Error::shape(
                    format!("the optimizer's {what} buffer"),
                    n,
                    host.len(),
                ));
            } else {
                stream
                    .memcpy_htod(host, dev)
                    .ctx("copying the optimizer state to the GPU")?;
            }
        }
        let len = n as i64;
        let mut l = gpu.launch(Kernel::ToF32);
        l.arg(&r.x).arg(&len).arg(&mut bufs.parts);
        // SAFETY: x and parts hold m×p values.
        unsafe { l.launch(grid(n)?) }.ctx("to_f32")?;
        r.mark = None;
        Ok(())
    }

    /// Copies the device's particles and optimizer buffers into `particles` and `optimizer`.
    ///
    /// # Errors
    /// [`Error::Shape`] when they are not the device's shape; [`CudaError::Call`] for a
    /// failed copy.
    pub(crate) fn download_state(
        &self,
        particles: &mut Matrix,
        optimizer: Option<&mut OptimizerState>,
    ) -> Result<()> {
        let Some(r) = self.resident.as_ref() else {
            return Err(CudaError::Unsupported("no state on the device".into()).into());
        };
        if particles.rows() != r.m || particles.cols() != r.p {
            return Err(Error::shape(
                "particles",
                format!("{}×{}", r.m, r.p),
                format!("{}×{}", particles.rows(), particles.cols()),
            ));
        }
        let stream = self.gpu.stream();
        stream
            .memcpy_dtoh(&r.x, particles.as_mut_slice())
            .ctx("copying the particles from the GPU")?;
        let bufs: Option<(&mut Vec<f64>, &mut Vec<f64>)> = match optimizer {
            Some(OptimizerState::Adagrad(s)) => Some((&mut s.g_sq, &mut s.n)),
            Some(OptimizerState::Adam(s)) => Some((&mut s.m, &mut s.v)),
            Some(OptimizerState::Sgd(_)) | None => None,
        };
        if let Some((a, b)) = bufs {
            let n = r.m * r.p;
            a.resize(n, 0.0);
            b.resize(n, 0.0);
            stream
                .memcpy_dtoh(&r.a, a.as_mut_slice())
                .ctx("copying the optimizer state from the GPU")?;
            stream
                .memcpy_dtoh(&r.b, b.as_mut_slice())
                .ctx("copying the optimizer state from the GPU")?;
        }
        self.gpu.synchronize()
    }

    /// The ELBO gradients of a step on the resident particles (as [`CudaStep::run`], ĝ kept on
    /// the device) and the particles' squared distances; waits for the GPU.
    ///
    /// # Errors
    /// As [`CudaStep::run`]; [`CudaError::Unsupported`] before [`CudaStep::upload_state`].
    pub(crate) fn resident_pass(
        &mut self,
        draws: usize,
        noise_seed: u64,
        rows: StepRows<'_>,
        jacobian: bool,
        tau: f64,
    ) -> Result<ResidentOutput> {
        let Some((m, p)) = self.resident.as_ref().map(|r| (r.m, r.p)) else {
            return Err(CudaError::Unsupported("no state on the device".into()).into());
        };
        if draws == 0 {
            return Err(Error::invalid("num_elbo_particles", "must be at least 1"));
        }
        self.device_pass(m, draws, noise_seed, rows, jacobian, tau)?;
        let k = m * draws;
        let (gpu, Some(r), Some(bufs)) = (&self.gpu, self.resident.as_mut(), self.buffers.as_ref())
        else {
            return Err(CudaError::Unsupported("internal: no resident buffers".into()).into());
        };
        let chunks = p.div_ceil(CHUNK);
        let (mm, pp, ch) = (int(m, "m")?, int(p, "p")?, int(CHUNK, "chunk")?);
        let cfg = reduce_grid(chunks, m * m)?;
        let mut l = gpu.launch(Kernel::PairSqPartials);
        l.arg(&r.x)
            .arg(&mm)
            .arg(&pp)
            .arg(&ch)
            .arg(&mut r.pair_partials);
        // SAFETY: one block per (chunk, pair); partials hold m²×chunks values.
        unsafe { l.launch(cfg) }.ctx("pair_sq_partials")?;
        let mut logp = vec![0.0; k];
        let mut logq = vec![0.0; k];
        let mut partials = vec![0.0; m * m * chunks];
        let stream = gpu.stream();
        stream
            .memcpy_dtoh(&bufs.logp.slice(..k), &mut logp)
            .ctx("copying log p from the GPU")?;
        stream
            .memcpy_dtoh(&bufs.logq.slice(..k), &mut logq)
            .ctx("copying log q from the GPU")?;
        stream
            .memcpy_dtoh(&r.pair_partials, &mut partials)
            .ctx("copying the distances from the GPU")?;
        gpu.synchronize()?;
        self.profiler.phase(&self.gpu, "distances and copies")?;
        let mut sq = Matrix::zeros(m, m);
        for i in 0..m {
            for j in i + 1..m {
                let at = (i * m + j) * chunks;
                let v: f64 = partials[at..at + chunks].iter().sum();
                sq.set(i, j, v);
                sq.set(j, i, v);
            }
        }
        Ok(ResidentOutput { logp, logq, sq })
    }

    /// φ on the device from the kernel's coefficients `coef` (K, W, s as
    /// [`rbf_coefficients`] lays them out) and the step's ĝ; returns ‖φ‖² (waits for it).
    ///
    /// # Errors
    /// [`Error::Shape`] for coefficients of another length; [`CudaError::Call`] for a failed
    /// launch or copy.
    pub(crate) fn direction(&mut self, coef: &[f64], c_att: f64, c_rep: f64) -> Result<f64> {
        let (gpu, Some(r), Some(bufs)) = (&self.gpu, self.resident.as_mut(), self.buffers.as_ref())
        else {
            return Err(CudaError::Unsupported("no state on the device".into()).into());
        };
        let (m, p) = (r.m, r.p);
        if coef.len() != 2 * m * m + m {
            return Err(Error::shape(
                "kernel coefficients",
                2 * m * m + m,
                coef.len(),
            ));
        }
        let stream = gpu.stream();
        stream
            .memcpy_htod(coef, &mut r.coef)
            .ctx("copying the kernel's weights to the GPU")?;
        let (mm, pp) = (int(m, "m")?, int(p, "p")?);
        let blocks = p.div_ceil(REDUCE_BLOCK as usize);
        let cfg = reduce_grid(blocks, 1)?;
        let mut l = gpu.launch(Kernel::SteinDirection);
        l.arg(&r.x)
            .arg(&bufs.ghat)
            .arg(&r.coef)
            .arg(&mm)
            .arg(&pp)
            .arg(&c_att)
            .arg(&c_rep)
            .arg(&mut r.phi)
            .arg(&mut r.norm_partials);
        // SAFETY: one thread per column c < p over the m particles; partials hold one value per
        // block.
        unsafe { l.launch(cfg) }.ctx("stein_direction")?;
        let mut partials = vec![0.0; blocks];
        stream
            .memcpy_dtoh(&r.norm_partials.slice(..blocks), &mut partials)
            .ctx("copying the step's norm from the GPU")?;
        gpu.synchronize()?;
        self.profiler.phase(&self.gpu, "direction and norm")?;
        Ok(partials.iter().sum())
    }

    /// Queues the optimizer's update of the resident particles along −φ (and their `f32`
    /// copy for the next step); not waited for.
    ///
    /// # Errors
    /// [`CudaError::Call`] for a failed launch.
    pub(crate) fn optimizer_step(&mut self, call: OptimizerCall) -> Result<()> {
        let (gpu, Some(r), Some(bufs)) = (&self.gpu, self.resident.as_mut(), self.buffers.as_mut())
        else {
            return Err(CudaError::Unsupported("no state on the device".into()).into());
        };
        let n = r.m * r.p;
        let len = n as i64;
        let h = call.h;
        let mut l = gpu.launch(Kernel::OptimizerStep);
        l.arg(&call.kind)
            .arg(&mut r.x)
            .arg(&mut r.a)
            .arg(&mut r.b)
            .arg(&r.phi)
            .arg(&len)
            .arg(&h[0])
            .arg(&h[1])
            .arg(&h[2])
            .arg(&h[3])
            .arg(&h[4])
            .arg(&mut bufs.parts);
        // SAFETY: every buffer holds m×p values.
        let cfg = grid(n)?;
        debug_assert_eq!(cfg.block_dim.0, BLOCK);
        unsafe { l.launch(cfg) }.ctx("optimizer_step")?;
        self.profiler.phase(&self.gpu, "optimizer")?;
        Ok(())
    }
}
