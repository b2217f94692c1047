//! The built-in BNNs on the device: forward and backward passes of all K draws at once, the
//! matrix products as strided-batched cuBLAS SGEMMs reading each draw's weights straight from
//! its row of θ (K×d), the elementwise work and the likelihood heads in the NVRTC kernels.
//!
//! The same math as the CPU `Mlp` + heads in `f32` (`mlp/mod.rs`, `bnn_regression.rs`,
//! `bnn_classifier.rs`): hidden layers act(x·W + b), a linear output layer, a Gaussian head with
//! a fixed σ or a learned Gamma precision (UCI, per-draw mini-batches), or a softmax head
//! (MNIST, one batch shared by every draw); N(0, s²) priors on the weights; log densities
//! summed in `f64`.

use cudarc::driver::{CudaSlice, PushKernelArg};
use statrs::function::gamma::ln_gamma;

use super::context::{grid, int, reduce_grid, Gpu, Kernel};
use super::error::{CallContext, CudaError};
use super::products::Product;
use crate::mlp::LN_SQRT_2PI;
use crate::{Activation, BnnClassifier, BnnRegression, Mlp, Noise};
use smi::{LogDensity, Result};

/// The likelihood on the network's outputs.
#[derive(Clone, Copy, Debug)]
enum Head {
    /// y ~ N(out, σ): fixed σ (`gamma` false, log prec = `log_prec_fixed`) or prec = e^u ~
    /// Gamma(shape, rate) with u the last column of θ.
    Gauss {
        gamma: bool,
        log_prec_fixed: f64,
        shape: f64,
        rate: f64,
        /// shape·ln(rate) − ln Γ(shape).
        gamma_const: f64,
    },
    /// Categorical(softmax(out)) over `classes`.
    Softmax { classes: usize },
}

/// Which rows each draw reads: a K×n index buffer (one batch per draw) or an n-row batch
/// shared by every draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowLayout {
    /// `rows` holds K×n indices.
    PerDraw,
    /// `rows` holds n indices.
    Shared,
}

/// Step buffers for K draws of n rows (reallocated when K or n change).
struct Buffers {
    k: usize,
    n: usize,
    /// acts\[0\]: the gathered inputs (K×n×in, or n×in for a shared batch); acts\[l\]: layer l's
    /// output, K×n×width.
    acts: Vec<CudaSlice<f32>>,
    delta: CudaSlice<f32>,
    delta_prev: CudaSlice<f32>,
    /// The targets of each draw's rows (K×n; Gaussian head).
    y_rows: CudaSlice<f32>,
    /// The labels of the shared rows (n; softmax head).
    label_rows: CudaSlice<i32>,
    /// The head's value per draw.
    ll: CudaSlice<f64>,
}

/// A built-in BNN with its data on the device.
pub(crate) struct Net {
    sizes: Vec<usize>,
    /// 1 = tanh, 2 = relu (the kernels' codes).
    act: i32,
    /// Offsets of each layer's weight and bias in θ.
    w_off: Vec<usize>,
    b_off: Vec<usize>,
    nw: usize,
    d: usize,
    prior_scale: f64,
    head: Head,
    num_data: usize,
    /// N × in inputs.
    x: CudaSlice<f32>,
    /// N targets (Gaussian head) or an empty buffer.
    y: CudaSlice<f32>,
    /// N labels (softmax head) or an empty buffer.
    labels: CudaSlice<i32>,
    buffers: Option<Buffers>,
}

/// Uploads `v` converted to `f32`.
pub(crate) fn upload_f32(gpu: &Gpu, v: &[f64], what: &str) -> Result<CudaSlice<f32>> {
    let host: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    gpu.stream()
        .clone_htod(&host)
        .ctx(&format!("copying {what} to the GPU"))
}

/// Uploads indices as device `int`s.
///
/// # Errors
/// [`CudaError::Unsupported`] for an index beyond `i32::MAX`.
pub(crate) fn upload_indices(gpu: &Gpu, v: &[usize], what: &str) -> Result<CudaSlice<i32>> {
    let host = v
        .iter()
        .map(|&i| int(i, what))
        .collect::<Result<Vec<i32>>>()?;
    let host = if host.is_empty() { vec![0] } else { host };
    gpu.stream()
        .clone_htod(&host)
        .ctx(&format!("copying {what} to the GPU"))
}

/// A zeroed device buffer of `len` (at least 1) values.
pub(crate) fn zeros<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    len: usize,
    what: &str,
) -> Result<CudaSlice<T>> {
    gpu.stream()
        .alloc_zeros::<T>(len.max(1))
        .ctx(&format!("allocating {what} ({len} values) on the GPU"))
}

impl Net {
    /// The regression network `model` (any [`Noise`]), its data copied to the device.
    ///
    /// # Errors
    /// [`CudaError::Call`] when the copies fail.
    pub(crate) fn regression(gpu: &Gpu, model: &BnnRegression) -> Result<Net> {
        let head = match model.noise() {
            Noise::Fixed(s) => Head::Gauss {
                gamma: false,
                log_prec_fixed: -2.0 * s.ln(),
                shape: 1.0,
                rate: 1.0,
                gamma_const: 0.0,
            },
            Noise::GammaPrecision { shape, rate } => Head::Gauss {
                gamma: true,
                log_prec_fixed: 0.0,
                shape,
                rate,
                gamma_const: shape * rate.ln() - ln_gamma(shape),
            },
        };
        let y = upload_f32(gpu, model.y(), "the targets")?;
        let labels = zeros::<i32>(gpu, 1, "an empty label buffer")?;
        Net::new(gpu, model.mlp(), model.dim(), model, head, y, labels)
    }

    /// The classifier `model`, its data copied to the device.
    ///
    /// # Errors
    /// [`CudaError::Call`] when the copies fail.
    pub(crate) fn classifier(gpu: &Gpu, model: &BnnClassifier) -> Result<Net> {
        let head = Head::Softmax {
            classes: model.num_classes(),
        };
        let y = zeros::<f32>(gpu, 1, "an empty target buffer")?;
        let labels = upload_indices(gpu, model.labels(), "the labels")?;
        Net::new(gpu, model.mlp(), model.dim(), model, head, y, labels)
    }

    fn new(
        gpu: &Gpu,
        mlp: &Mlp,
        d: usize,
        model: &dyn ModelData,
        head: Head,
        y: CudaSlice<f32>,
        labels: CudaSlice<i32>,
    ) -> Result<Net> {
        let blocks = mlp.layout();
        let blocks = blocks.blocks();
        let w_off = blocks.iter().step_by(2).map(|b| b.range().start).collect();
        let b_off = blocks
            .iter()
            .skip(1)
            .step_by(2)
            .map(|b| b.range().start)
            .collect();
        let act = match mlp.activation() {
            Activation::Tanh => 1,
            Activation::Relu => 2,
        };
        Ok(Net {
            sizes: mlp.sizes().to_vec(),
            act,
            w_off,
            b_off,
            nw: mlp.dim(),
            d,
            prior_scale: model.prior_scale_of(),
            head,
            num_data: model.x_of().rows(),
            x: upload_f32(gpu, model.x_of().as_slice(), "the inputs")?,
            y,
            labels,
            buffers: None,
        })
    }

    /// d, the model's dimension.
    pub(crate) fn dim(&self) -> usize {
        self.d
    }

    /// N, the data rows.
    pub(crate) fn num_data(&self) -> usize {
        self.num_data
    }

    /// The row layout this network's head takes: per-draw batches for regression, one shared
    /// batch for classification.
    pub(crate) fn row_layout(&self) -> RowLayout {
        match self.head {
            Head::Gauss { .. } => RowLayout::PerDraw,
            Head::Softmax { .. } => RowLayout::Shared,
        }
    }

    fn buffers(&mut self, gpu: &Gpu, k: usize, n: usize) -> Result<()> {
        if self.buffers.as_ref().is_some_and(|b| b.k == k && b.n == n) {
            return Ok(());
        }
        self.buffers = None; // free the old ones first
        let input_rows = match self.row_layout() {
            RowLayout::PerDraw => k * n,
            RowLayout::Shared => n,
        };
        let mut acts = vec![zeros(gpu, input_rows * self.sizes[0], "the inputs")?];
        for &w in &self.sizes[1..] {
            acts.push(zeros(gpu, k * n * w, "the activations")?);
        }
        // errors exist for the layers' outputs only (not for the inputs)
        let widest = self.sizes[1..].iter().copied().max().unwrap_or(1);
        self.buffers = Some(Buffers {
            k,
            n,
            acts,
            delta: zeros(gpu, k * n * widest, "the back-propagated errors")?,
            delta_prev: zeros(gpu, k * n * widest, "the back-propagated errors")?,
            y_rows: zeros(gpu, k * n, "the batch targets")?,
            label_rows: zeros(gpu, n, "the batch labels")?,
            ll: zeros(gpu, k, "the log-likelihoods")?,
        });
        Ok(())
    }

    /// log p and ∇ log p of K draws `theta` (K×d, on the device) on the batch `rows` (K×n
    /// indices for [`RowLayout::PerDraw`], n for [`RowLayout::Shared`], as
    /// [`Net::row_layout`] says), likelihood × `scale`, [+ log-Jacobian of the precision].
    /// Writes `grad` (K×d) and `logp` (K); queued on the stream, not waited for.
    ///
    /// # Errors
    /// [`CudaError::Call`] for a failed launch or allocation.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn log_density_and_grad(
        &mut self,
        gpu: &Gpu,
        theta: &CudaSlice<f32>,
        k: usize,
        rows: &CudaSlice<i32>,
        n: usize,
        scale: f64,
        jacobian: bool,
        grad: &mut CudaSlice<f32>,
        logp: &mut CudaSlice<f64>,
    ) -> Result<()> {
        self.buffers(gpu, k, n)?;
        self.gather(gpu, rows, k, n)?;
        self.forward(gpu, theta, k, n)?;
        self.head(gpu, theta, k, n, scale, jacobian, grad)?;
        self.backward(gpu, theta, k, n, grad)?;
        self.prior(gpu, theta, k, grad, logp)
    }

    /// Gathers the batch's inputs (and targets or labels).
    fn gather(&mut self, gpu: &Gpu, rows: &CudaSlice<i32>, k: usize, n: usize) -> Result<()> {
        let layout = self.row_layout();
        let Some(buf) = self.buffers.as_mut() else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let count = match layout {
            RowLayout::PerDraw => k * n,
            RowLayout::Shared => n,
        };
        let (cnt, width) = (int(count, "batch rows")?, int(self.sizes[0], "inputs")?);
        let mut l = gpu.launch(Kernel::GatherRows);
        l.arg(&self.x)
            .arg(rows)
            .arg(&cnt)
            .arg(&width)
            .arg(&mut buf.acts[0]);
        // SAFETY: rows holds `count` indices below N (checked or drawn below N); the outputs
        // hold count × width values.
        unsafe { l.launch(grid(count * self.sizes[0])?) }.ctx("gather_rows (inputs)")?;
        let one = 1i32;
        match self.head {
            Head::Gauss { .. } => {
                let mut l = gpu.launch(Kernel::GatherRows);
                l.arg(&self.y)
                    .arg(rows)
                    .arg(&cnt)
                    .arg(&one)
                    .arg(&mut buf.y_rows);
                // SAFETY: as above, width 1.
                unsafe { l.launch(grid(count)?) }.ctx("gather_rows (targets)")?;
            }
            Head::Softmax { .. } => {
                let mut l = gpu.launch(Kernel::GatherLabels);
                l.arg(&self.labels)
                    .arg(rows)
                    .arg(&cnt)
                    .arg(&mut buf.label_rows);
                // SAFETY: as above, one label per row.
                unsafe { l.launch(grid(count)?) }.ctx("gather_labels")?;
            }
        }
        Ok(())
    }

    fn forward(&mut self, gpu: &Gpu, theta: &CudaSlice<f32>, k: usize, n: usize) -> Result<()> {
        let shared = self.row_layout() == RowLayout::Shared;
        let Some(buf) = self.buffers.as_mut() else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let last = self.sizes.len() - 2;
        for l in 0..=last {
            let (n_in, n_out) = (self.sizes[l], self.sizes[l + 1]);
            let p = Product::forward(n_in, n_out, self.d, k, n, l == 0 && shared);
            let (lo, hi) = buf.acts.split_at_mut(l + 1);
            let w = theta.slice(self.w_off[l]..);
            p.run(gpu, &w, &lo[l].as_view(), &mut hi[0].as_view_mut())?;
            let act = if l == last { 0 } else { self.act };
            let (kk, nn, width) = (int(k, "K")?, int(n, "n")?, int(n_out, "width")?);
            let (d, boff) = (int(self.d, "d")?, int(self.b_off[l], "bias offset")?);
            let mut launch = gpu.launch(Kernel::BiasAct);
            launch
                .arg(&mut hi[0])
                .arg(theta)
                .arg(&kk)
                .arg(&nn)
                .arg(&width)
                .arg(&d)
                .arg(&boff)
                .arg(&act);
            // SAFETY: hi[0] holds K×n×n_out values, θ K×d with the bias inside each row.
            unsafe { launch.launch(grid(k * n * n_out)?) }.ctx("bias_act")?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn head(
        &mut self,
        gpu: &Gpu,
        theta: &CudaSlice<f32>,
        k: usize,
        n: usize,
        scale: f64,
        jacobian: bool,
        grad: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let Some(buf) = self.buffers.as_mut() else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let out = &buf.acts[self.sizes.len() - 1];
        let cfg = reduce_grid(k, 1)?;
        let nn = int(n, "n")?;
        match self.head {
            Head::Gauss {
                gamma,
                log_prec_fixed,
                shape,
                rate,
                gamma_const,
            } => {
                let (d, g, jac) = (int(self.d, "d")?, i32::from(gamma), i32::from(jacobian));
                let mut l = gpu.launch(Kernel::GaussHead);
                l.arg(out)
                    .arg(&buf.y_rows)
                    .arg(theta)
                    .arg(&nn)
                    .arg(&d)
                    .arg(&scale)
                    .arg(&g)
                    .arg(&log_prec_fixed)
                    .arg(&shape)
                    .arg(&rate)
                    .arg(&gamma_const)
                    .arg(&jac)
                    .arg(&mut buf.ll)
                    .arg(&mut buf.delta)
                    .arg(grad);
                // SAFETY: one block per draw over its n outputs and targets (K×n each).
                unsafe { l.launch(cfg) }.ctx("gauss_head")?;
            }
            Head::Softmax { classes } => {
                let c = int(classes, "classes")?;
                let mut l = gpu.launch(Kernel::SoftmaxHead);
                l.arg(out)
                    .arg(&buf.label_rows)
                    .arg(&nn)
                    .arg(&c)
                    .arg(&scale)
                    .arg(&mut buf.ll)
                    .arg(&mut buf.delta);
                // SAFETY: one block per draw over its n×C logits; n shared labels below C.
                unsafe { l.launch(cfg) }.ctx("softmax_head")?;
            }
        }
        Ok(())
    }

    fn backward(
        &mut self,
        gpu: &Gpu,
        theta: &CudaSlice<f32>,
        k: usize,
        n: usize,
        grad: &mut CudaSlice<f32>,
    ) -> Result<()> {
        let shared = self.row_layout() == RowLayout::Shared;
        let Some(buf) = self.buffers.as_mut() else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let (kk, nn, d) = (int(k, "K")?, int(n, "n")?, int(self.d, "d")?);
        for l in (0..self.sizes.len() - 1).rev() {
            let (n_in, n_out) = (self.sizes[l], self.sizes[l + 1]);
            let p = Product::weight_grad(n_in, n_out, self.d, k, n, l == 0 && shared);
            let mut gw = grad.slice_mut(self.w_off[l]..);
            p.run(gpu, &buf.delta.as_view(), &buf.acts[l].as_view(), &mut gw)?;
            let (width, goff) = (int(n_out, "width")?, int(self.b_off[l], "bias offset")?);
            let mut launch = gpu.launch(Kernel::ColSums);
            launch
                .arg(&buf.delta)
                .arg(&kk)
                .arg(&nn)
                .arg(&width)
                .arg(&d)
                .arg(&goff)
                .arg(&mut *grad);
            // SAFETY: δ holds K×n×n_out values; the bias lies inside each gradient row.
            unsafe { launch.launch(grid(k * n_out)?) }.ctx("col_sums")?;
            if l == 0 {
                break;
            }
            let p = Product::delta(n_in, n_out, self.d, k, n);
            let w = theta.slice(self.w_off[l]..);
            p.run(
                gpu,
                &w,
                &buf.delta.as_view(),
                &mut buf.delta_prev.as_view_mut(),
            )?;
            let len = i64::try_from(k * n * n_in).unwrap_or(i64::MAX);
            let mut launch = gpu.launch(Kernel::ActGrad);
            launch
                .arg(&mut buf.delta_prev)
                .arg(&buf.acts[l])
                .arg(&len)
                .arg(&self.act);
            // SAFETY: δ_prev and acts[l] hold K×n×n_in values.
            unsafe { launch.launch(grid(k * n * n_in)?) }.ctx("act_grad")?;
            std::mem::swap(&mut buf.delta, &mut buf.delta_prev);
        }
        Ok(())
    }

    fn prior(
        &mut self,
        gpu: &Gpu,
        theta: &CudaSlice<f32>,
        k: usize,
        grad: &mut CudaSlice<f32>,
        logp: &mut CudaSlice<f64>,
    ) -> Result<()> {
        let Some(buf) = self.buffers.as_ref() else {
            return Err(CudaError::Unsupported("internal: no step buffers".into()).into());
        };
        let s = self.prior_scale;
        let inv_var = 1.0 / (s * s);
        let log_norm = -(self.nw as f64) * (s.ln() + LN_SQRT_2PI);
        let (nw, d) = (int(self.nw, "network weights")?, int(self.d, "d")?);
        let cfg = reduce_grid(k, 1)?;
        let mut l = gpu.launch(Kernel::PriorFinish);
        l.arg(theta)
            .arg(&nw)
            .arg(&d)
            .arg(&inv_var)
            .arg(&log_norm)
            .arg(&buf.ll)
            .arg(grad)
            .arg(logp);
        // SAFETY: one block per draw over the first nw entries of its θ and gradient rows.
        unsafe { l.launch(cfg) }.ctx("prior_finish")?;
        Ok(())
    }
}

/// What [`Net::new`] reads of either model.
trait ModelData {
    fn prior_scale_of(&self) -> f64;
    fn x_of(&self) -> &smi::Matrix;
}

impl ModelData for BnnRegression {
    fn prior_scale_of(&self) -> f64 {
        self.prior_scale()
    }
    fn x_of(&self) -> &smi::Matrix {
        self.x()
    }
}

impl ModelData for BnnClassifier {
    fn prior_scale_of(&self) -> f64 {
        self.prior_scale()
    }
    fn x_of(&self) -> &smi::Matrix {
        self.x()
    }
}
