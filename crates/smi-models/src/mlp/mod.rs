//! A multi-layer perceptron over many parameter draws at once, with a hand-written backward pass.
//!
//! The network for draw k reads its weights straight from row k of θ (K×d, row-major) at fixed
//! offsets given by [`Mlp::layout`]: `layer1.weight` `[in, h1]`, `layer1.bias` `[h1]`, …,
//! `out.weight` `[h_last, out]`, `out.bias` `[out]`. Hidden layers apply the activation, the
//! output layer is linear: `f(x) = act(…act(x·W1 + b1)…)·W_out + b_out` (docs/algorithms.md §7.2–7.4).
//!
//! Draws are split into contiguous chunks evaluated in parallel with rayon; each chunk takes
//! its scratch buffers from a per-thread cache, the matrix products go through
//! [`smi::linalg::gemm`] (sequential faer, or plain loops for products with a dimension of 1),
//! and the vectorised elementwise and fused loops live in `kernels`. The arithmetic runs in
//! `f32` (fast, the default of the built-in models) or `f64` (exact, used by the gradient
//! tests); log densities are always accumulated in `f64`.

use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use smi::check_shapes;
use smi::linalg::{gemm, Op};
use smi::Layout;
use smi::Matrix;
use smi::{Batch, Rows};
use smi::{Error, Result};

mod kernels;
pub(crate) mod softmax;

use kernels::convert_and_sum_sq;
pub use kernels::MlpFloat;

/// ln √(2π).
pub(crate) const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// The hidden-layer nonlinearity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    /// tanh (the wave and MNIST networks, docs/algorithms.md §7.2, §7.4).
    Tanh,
    /// max(0, x) (the UCI networks, docs/algorithms.md §7.3).
    Relu,
}

/// The floating-point type the network arithmetic runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Precision {
    /// `f32` arithmetic with a vectorised tanh (relative error ≈ 1e-7); the default.
    #[default]
    F32,
    /// `f64` arithmetic with the exact tanh; slower, used to check gradients.
    F64,
}

/// One dense layer: offsets of its weight (`n_in × n_out`, row-major) and bias in θ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Dense {
    n_in: usize,
    n_out: usize,
    w: usize,
    b: usize,
}

/// The likelihood on top of the network: turns one draw's outputs into a log density and its
/// gradient with respect to those outputs. Implemented by the built-in BNN models; implement it
/// to put another likelihood on an [`Mlp`].
pub trait Head: Sync {
    /// For one draw: `theta` is its full parameter row (length d, network weights first), `rows`
    /// the data rows its n outputs belong to (`None` = rows `0..n`), `out` the network outputs
    /// (n × out, row-major) and `scale` = [`Batch::scale`].
    ///
    /// Returns `scale` × log-likelihood plus every log-density term of the parameters beyond the
    /// network's (their prior, log-Jacobian). Writes `dout` = ∂(returned value)/∂`out` (n × out)
    /// and **adds** the gradient with respect to `theta[mlp.dim()..]` into `grad` (length d; the
    /// driver has zeroed those entries and owns `grad[..mlp.dim()]`).
    fn log_lik<T: MlpFloat>(
        &self,
        theta: &[f64],
        rows: Option<&[usize]>,
        out: &[T],
        scale: f64,
        dout: &mut [T],
        grad: &mut [f64],
    ) -> f64;
}

/// A fully connected network `sizes[0] → sizes[1] → … → sizes[L]` whose weights live in θ.
///
/// `sizes[0]` is the input width, `sizes[L]` the output width, the ones between are hidden
/// layers with [`Activation`]. Presets: wave `[1, h, h, 1]` tanh (h = 5 or 100), UCI
/// `[in, 50, 50, 1]` relu, MNIST `[784, 100, 10]` or `[784, 100, 100, 10]` tanh.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mlp {
    sizes: Vec<usize>,
    activation: Activation,
    layers: Vec<Dense>,
    layout: Layout,
}

/// Scratch buffers of one chunk of draws, allocated once per chunk.
struct Workspace<T> {
    /// The draw's network weights, converted to T (length `mlp.dim()`).
    w: Vec<T>,
    /// Gradient of the network weights in T.
    gw: Vec<T>,
    /// `acts[0]` = inputs (n × in); `acts[l]` = layer l's output (n × `sizes[l]`).
    acts: Vec<Vec<T>>,
    /// Back-propagated errors (n × widest layer), current and previous layer.
    delta: Vec<T>,
    delta_prev: Vec<T>,
    /// n ones, for the bias gradients.
    ones: Vec<T>,
    /// Which inputs `acts[0]` holds, when they are rows shared by every draw of a call
    /// (`None` when unknown): a later call on the same rows of the same matrix skips the copy.
    inputs: Option<Filled>,
}

/// The rows of an inputs matrix a workspace's `acts[0]` holds.
///
/// The matrix is named by a weak reference to its `Arc`: while the reference lives, its
/// allocation is not given to another `Arc` and the matrix cannot be changed in place
/// (`Arc::get_mut` refuses while a weak reference exists, `Arc::make_mut` moves the value to a
/// new allocation), so a live `Arc` at the same address is the same, unchanged matrix.
struct Filled {
    /// The matrix.
    x: Weak<Matrix>,
    /// Its rows, in order (`None`: all of them).
    rows: Option<Vec<usize>>,
}

impl Filled {
    /// Whether these are the rows `rows` of `x`.
    fn is(&self, x: &Arc<Matrix>, rows: Option<&[usize]>) -> bool {
        std::ptr::eq(self.x.as_ptr(), Arc::as_ptr(x)) && self.rows.as_deref() == rows
    }
}

impl Mlp {
    /// A network with layer widths `sizes` = `[in, h1, …, out]` (at least two entries).
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] when fewer than two sizes are given or one is zero.
    pub fn new(sizes: &[usize], activation: Activation) -> Result<Self> {
        if sizes.len() < 2 {
            return Err(Error::invalid(
                "sizes",
                "an MLP needs at least an input and an output width",
            ));
        }
        if let Some(i) = sizes.iter().position(|&s| s == 0) {
            return Err(Error::invalid(
                "sizes",
                format!("layer width {i} is zero: {sizes:?}"),
            ));
        }
        let num = sizes.len() - 1;
        let mut layout = Layout::default();
        let mut layers = Vec::with_capacity(num);
        for l in 0..num {
            let (n_in, n_out) = (sizes[l], sizes[l + 1]);
            let name = if l + 1 == num {
                "out".to_string()
            } else {
                format!("layer{}", l + 1)
            };
            let w = layout.push(format!("{name}.weight"), vec![n_in, n_out]);
            let b = layout.push(format!("{name}.bias"), vec![n_out]);
            layers.push(Dense { n_in, n_out, w, b });
        }
        Ok(Mlp {
            sizes: sizes.to_vec(),
            activation,
            layers,
            layout,
        })
    }

    /// The layer widths `[in, h1, …, out]`.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The hidden-layer activation.
    pub fn activation(&self) -> Activation {
        self.activation
    }

    /// Input width.
    pub fn input_dim(&self) -> usize {
        self.sizes[0]
    }

    /// Output width.
    pub fn output_dim(&self) -> usize {
        self.sizes[self.sizes.len() - 1]
    }

    /// Number of weights and biases: Σ_l (`sizes[l]` + 1)·`sizes[l+1]`.
    pub fn dim(&self) -> usize {
        self.layout.dim()
    }

    /// Named blocks `layer{l}.weight` `[in, out]`, `layer{l}.bias` `[out]` for hidden layers
    /// l = 1, 2, …, then `out.weight`, `out.bias`, covering `0..dim()`.
    pub fn layout(&self) -> Layout {
        self.layout.clone()
    }

    fn widest(&self) -> usize {
        self.sizes[1..].iter().copied().max().unwrap_or(0)
    }

    /// A workspace for n rows, taken from this thread's cache when one of type `T` is there
    /// (its buffers keep their allocation; every entry is written before it is read, so stale
    /// contents do not matter). Hand it back with [`release_workspace`].
    fn workspace<T: MlpFloat>(&self, n: usize) -> Box<Workspace<T>> {
        let cached = WORKSPACES.with(|c| {
            let mut c = c.borrow_mut();
            let i = c.iter().position(|b| b.is::<Workspace<T>>())?;
            c.swap_remove(i).downcast::<Workspace<T>>().ok()
        });
        let mut ws = cached.unwrap_or_else(|| {
            Box::new(Workspace {
                w: Vec::new(),
                gw: Vec::new(),
                acts: Vec::new(),
                delta: Vec::new(),
                delta_prev: Vec::new(),
                ones: Vec::new(),
                inputs: None,
            })
        });
        let w = self.widest();
        ws.w.resize(self.dim(), T::ZERO);
        ws.gw.resize(self.dim(), T::ZERO);
        ws.acts.resize_with(self.sizes.len(), Vec::new);
        for (a, &s) in ws.acts.iter_mut().zip(&self.sizes) {
            a.resize(n * s, T::ZERO);
        }
        ws.delta.resize(n * w, T::ZERO);
        ws.delta_prev.resize(n * w, T::ZERO);
        // entries beyond the old length become 1; the old ones are 1 already
        ws.ones.resize(n, T::ONE);
        ws
    }

    /// Forward pass for n rows already in `ws.acts[0]`, weights in `ws.w`.
    fn forward_ws<T: MlpFloat>(&self, ws: &mut Workspace<T>, n: usize) {
        let last = self.layers.len() - 1;
        for (l, layer) in self.layers.iter().enumerate() {
            let (lo, hi) = ws.acts.split_at_mut(l + 1);
            let prev = &lo[l][..n * layer.n_in];
            let cur = &mut hi[0][..n * layer.n_out];
            if l == 0 && layer.n_in == 1 && l < last {
                // one input (1-D regression): act(x·w + b) in one pass, no product call
                let h = layer.n_out;
                T::scalar_input_layer(
                    prev,
                    &ws.w[layer.w..layer.w + h],
                    &ws.w[layer.b..layer.b + h],
                    self.activation,
                    cur,
                );
                continue;
            }
            gemm(
                cur,
                prev,
                Op::N,
                &ws.w[layer.w..],
                Op::N,
                n,
                layer.n_in,
                layer.n_out,
                T::ONE,
                false,
            );
            // the bias is added in the same pass as the activation
            let bias = &ws.w[layer.b..layer.b + layer.n_out];
            if l == last {
                for row in cur.chunks_exact_mut(layer.n_out) {
                    for (v, &b) in row.iter_mut().zip(bias) {
                        *v += b;
                    }
                }
            } else {
                match self.activation {
                    Activation::Tanh => T::bias_tanh_in_place(cur, bias),
                    Activation::Relu => T::bias_relu_in_place(cur, bias),
                }
            }
        }
    }

    /// Backward pass from `ws.delta` = ∂/∂out (n × out) into `ws.gw`.
    fn backward_ws<T: MlpFloat>(&self, ws: &mut Workspace<T>, n: usize) {
        if let [l0, l1] = self.layers[..] {
            if l0.n_in == 1 && l1.n_out == 1 {
                // [1, h, 1]: the whole backward pass in one sweep over the hidden activations
                let h = l1.n_in;
                debug_assert!(l0.w + h <= l0.b && l0.b + h <= l1.w && l1.w + h <= l1.b);
                let delta = &ws.delta[..n];
                let (g0, g1) = ws.gw.split_at_mut(l1.w);
                let (gw1, rest) = g0[l0.w..].split_at_mut(h);
                let gb1 = &mut rest[l0.b - l0.w - h..][..h];
                let (gw2, rest) = g1.split_at_mut(h);
                rest[l1.b - l1.w - h] = delta.iter().fold(T::ZERO, |acc, &d| acc + d);
                T::backward_one_in_one_out(
                    &ws.acts[0][..n],
                    &ws.acts[1][..n * h],
                    delta,
                    &ws.w[l1.w..l1.w + h],
                    self.activation,
                    gw2,
                    gw1,
                    gb1,
                );
                return;
            }
        }
        for (l, layer) in self.layers.iter().enumerate().rev() {
            if l > 0 && layer.n_out == 1 {
                // a single output (regression): weight and bias gradients and the error of the
                // layer below in one pass over its activations
                let h = layer.n_in;
                let delta = &ws.delta[..n];
                let (gw, gb) = ws.gw[layer.w..].split_at_mut(h);
                gb[0] = delta.iter().fold(T::ZERO, |acc, &d| acc + d);
                T::backward_single_output(
                    &ws.acts[l][..n * h],
                    delta,
                    &ws.w[layer.w..layer.w + h],
                    self.activation,
                    gw,
                    &mut ws.delta_prev[..n * h],
                );
                std::mem::swap(&mut ws.delta, &mut ws.delta_prev);
                continue;
            }
            let delta = &ws.delta[..n * layer.n_out];
            let prev = &ws.acts[l][..n * layer.n_in];
            gemm(
                &mut ws.gw[layer.w..],
                prev,
                Op::T,
                delta,
                Op::N,
                layer.n_in,
                n,
                layer.n_out,
                T::ONE,
                false,
            );
            // column sums of δ as the product 1ᵀ·δ
            gemm(
                &mut ws.gw[layer.b..],
                &ws.ones[..n],
                Op::N,
                delta,
                Op::N,
                1,
                n,
                layer.n_out,
                T::ONE,
                false,
            );
            if l == 0 {
                break;
            }
            let dprev = &mut ws.delta_prev[..n * layer.n_in];
            gemm(
                dprev,
                delta,
                Op::N,
                &ws.w[layer.w..],
                Op::T,
                n,
                layer.n_out,
                layer.n_in,
                T::ONE,
                false,
            );
            match self.activation {
                Activation::Tanh => {
                    for (d, &a) in dprev.iter_mut().zip(prev) {
                        *d *= T::ONE - a * a;
                    }
                }
                Activation::Relu => {
                    for (d, &a) in dprev.iter_mut().zip(prev) {
                        *d = if a > T::ZERO { *d } else { T::ZERO };
                    }
                }
            }
            std::mem::swap(&mut ws.delta, &mut ws.delta_prev);
        }
    }

    fn check_inputs(&self, x: &Matrix, dim: usize) -> Result<()> {
        if x.cols() != self.input_dim() {
            return Err(Error::shape(
                "MLP inputs (columns of x)",
                self.input_dim(),
                x.cols(),
            ));
        }
        if dim < self.dim() {
            return Err(Error::shape(
                "parameter dimension d (at least the MLP's weights)",
                self.dim(),
                dim,
            ));
        }
        Ok(())
    }

    /// [`Mlp::forward`] in `precision`, into a new vector of K·n·out values (K =
    /// `theta.len() / dim`).
    ///
    /// # Errors
    /// As [`Mlp::forward`].
    pub fn forward_in(
        &self,
        precision: Precision,
        theta: &[f64],
        dim: usize,
        x: &Matrix,
    ) -> Result<Vec<f64>> {
        if dim == 0 || !theta.len().is_multiple_of(dim) {
            return Err(Error::shape("theta", format!("K×{dim}"), theta.len()));
        }
        let mut out = vec![0.0; theta.len() / dim * x.rows() * self.output_dim()];
        match precision {
            Precision::F32 => self.forward::<f32>(theta, dim, x, &mut out)?,
            Precision::F64 => self.forward::<f64>(theta, dim, x, &mut out)?,
        }
        Ok(out)
    }

    /// Network outputs for K = `theta.len() / dim` draws on every row of `x` (n × in).
    ///
    /// `theta` is K×`dim` row-major with the network weights in the first [`Mlp::dim`] columns
    /// (the rest, e.g. a noise precision, is ignored). Writes `out` (K × n × out, row-major:
    /// entry `(k·n + i)·out + j`). Runs in precision `T` (`f32` or `f64`).
    ///
    /// # Errors
    /// [`Error::Shape`] when `x` has the wrong width, `dim < self.dim()`, `theta` is not a whole
    /// number of rows or `out` has the wrong length.
    pub fn forward<T: MlpFloat>(
        &self,
        theta: &[f64],
        dim: usize,
        x: &Matrix,
        out: &mut [f64],
    ) -> Result<()> {
        self.check_inputs(x, dim)?;
        if !theta.len().is_multiple_of(dim) {
            return Err(Error::shape("theta", format!("K×{dim}"), theta.len()));
        }
        let k = theta.len() / dim;
        let n = x.rows();
        let per = n * self.output_dim();
        if out.len() != k * per {
            return Err(Error::shape(
                "MLP outputs",
                format!("K·n·out = {}", k * per),
                out.len(),
            ));
        }
        if k == 0 || per == 0 {
            return Ok(());
        }
        let chunk = chunk_size(k, n * dim);
        theta
            .par_chunks(chunk * dim)
            .zip(out.par_chunks_mut(chunk * per))
            .for_each(|(th, o)| {
                let mut ws = self.workspace::<T>(n);
                fill_inputs(&mut ws.acts[0], x, None);
                ws.inputs = None;
                for (t, ok) in th.chunks_exact(dim).zip(o.chunks_exact_mut(per)) {
                    for (w, &v) in ws.w.iter_mut().zip(t) {
                        *w = T::of_f64(v);
                    }
                    self.forward_ws(&mut ws, n);
                    let res = &ws.acts[self.sizes.len() - 1][..per];
                    for (o, &v) in ok.iter_mut().zip(res) {
                        *o = v.to_f64();
                    }
                }
                release_workspace(ws);
            });
        Ok(())
    }

    /// Log density and gradient of a model "N(0, `prior_scale`²) on every network weight, then
    /// `head` on the outputs", for K = `theta.len() / dim` draws (`theta`, `grad`: K×`dim`).
    ///
    /// Draw k runs on the rows `batch.rows_for_draw(k)` of `x` (N × in); `logp[k]` = Gaussian
    /// prior of the weights + what `head` returns (its `scale`d log-likelihood and the terms of
    /// the extra parameters). The network runs in precision `T`; sums are in `f64`.
    ///
    /// `x` is shared (`Arc`) so that the inputs of rows shared by all draws
    /// ([`Rows::All`], [`Rows::Shared`]) are copied into the network's precision once per thread
    /// and kept for the next call on the same rows of the same `x` (an SMI step calls the model
    /// once per small block of draws, all on one mini-batch).
    ///
    /// # Errors
    /// [`Error::Shape`] for inconsistent buffers (see [`check_shapes`]) or a wrong input width;
    /// [`Error::Data`] when a batch row is out of range; [`Error::InvalidSettings`] for a
    /// non-positive `prior_scale`.
    #[allow(clippy::too_many_arguments)]
    pub fn log_density_and_grad<T: MlpFloat, H: Head>(
        &self,
        theta: &[f64],
        dim: usize,
        x: &Arc<Matrix>,
        batch: &Batch,
        prior_scale: f64,
        head: &H,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        let k = check_shapes(dim, theta, logp, grad)?;
        self.check_inputs(x, dim)?;
        batch.validate(x.rows(), k)?;
        if !(prior_scale > 0.0 && prior_scale.is_finite()) {
            return Err(Error::invalid(
                "prior_scale",
                format!("must be positive and finite, got {prior_scale}"),
            ));
        }
        if k == 0 {
            return Ok(());
        }
        let max_rows = match &batch.rows {
            Rows::All => x.rows(),
            Rows::Shared(r) => r.len(),
            Rows::PerDraw { size, .. } => *size,
        };
        let shared_rows = !matches!(batch.rows, Rows::PerDraw { .. });
        let nw = self.dim();
        let out_dim = self.output_dim();
        let inv_var = 1.0 / (prior_scale * prior_scale);
        let log_norm = -(nw as f64) * (prior_scale.ln() + LN_SQRT_2PI);
        let chunk = chunk_size(k, 3 * max_rows * dim);
        theta
            .par_chunks(chunk * dim)
            .zip(grad.par_chunks_mut(chunk * dim))
            .zip(logp.par_chunks_mut(chunk))
            .enumerate()
            .for_each(|(c, ((th, gr), lp))| {
                let mut ws = self.workspace::<T>(max_rows);
                // rows shared by every draw: already in the workspace when an earlier call
                // (e.g. the previous sub-block of an SMI step) copied the same rows of x
                let mut filled = shared_rows
                    && ws
                        .inputs
                        .as_ref()
                        .is_some_and(|f| f.is(x, batch.rows_for_draw(c * chunk)));
                for (j, ((t, g), l)) in th
                    .chunks_exact(dim)
                    .zip(gr.chunks_exact_mut(dim))
                    .zip(lp.iter_mut())
                    .enumerate()
                {
                    let rows = batch.rows_for_draw(c * chunk + j);
                    let n = rows.map_or(x.rows(), <[usize]>::len);
                    if !(shared_rows && filled) {
                        fill_inputs(&mut ws.acts[0], x, rows);
                        filled = true;
                        ws.inputs = shared_rows.then(|| Filled {
                            x: Arc::downgrade(x),
                            rows: rows.map(<[usize]>::to_vec),
                        });
                    }
                    let ss = convert_and_sum_sq(&mut ws.w, &t[..nw]);
                    g[nw..].iter_mut().for_each(|v| *v = 0.0);
                    let ll = if n == 0 {
                        ws.gw.iter_mut().for_each(|v| *v = T::ZERO);
                        let empty: [T; 0] = [];
                        head.log_lik(t, rows, &empty, batch.scale, &mut [], g)
                    } else {
                        self.forward_ws(&mut ws, n);
                        let out = &ws.acts[self.sizes.len() - 1][..n * out_dim];
                        let ll = head.log_lik(
                            t,
                            rows,
                            out,
                            batch.scale,
                            &mut ws.delta[..n * out_dim],
                            g,
                        );
                        self.backward_ws(&mut ws, n);
                        ll
                    };
                    add_prior_gradient(&ws.gw, &t[..nw], inv_var, &mut g[..nw]);
                    *l = log_norm - 0.5 * ss * inv_var + ll;
                }
                release_workspace(ws);
            });
        Ok(())
    }
}

thread_local! {
    /// Workspaces handed back after use, at most one per precision and thread, so that repeated
    /// small calls (a MAP or SVGD step is a few microseconds) neither allocate nor zero buffers.
    static WORKSPACES: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Workspaces larger than this many bytes are freed instead of cached (a forward pass over a
/// whole test set would otherwise keep its buffers for the life of the thread).
const MAX_CACHED_WORKSPACE_BYTES: usize = 4 << 20;

/// Returns `ws` to this thread's cache (or frees it when it is large).
fn release_workspace<T: MlpFloat>(ws: Box<Workspace<T>>) {
    let values = ws.w.capacity()
        + ws.gw.capacity()
        + ws.acts.iter().map(Vec::capacity).sum::<usize>()
        + ws.delta.capacity()
        + ws.delta_prev.capacity()
        + ws.ones.capacity();
    if values * std::mem::size_of::<T>() <= MAX_CACHED_WORKSPACE_BYTES {
        WORKSPACES.with(|c| c.borrow_mut().push(ws));
    }
}

/// Multiply-adds below which a chunk is not worth a rayon task (≈ 25–50 µs of work): tiny steps
/// (SVGD, MAP on small nets) then run on the calling thread without dispatch.
const MIN_CHUNK_WORK: usize = 1 << 18;

/// Draws per parallel chunk: about four chunks per rayon thread, but at least
/// [`MIN_CHUNK_WORK`] multiply-adds per chunk (`work_per_draw` ≈ rows × parameters).
fn chunk_size(k: usize, work_per_draw: usize) -> usize {
    k.div_ceil(4 * rayon::current_num_threads())
        .max(MIN_CHUNK_WORK.div_ceil(work_per_draw.max(1)))
        .clamp(1, k.max(1))
}

smi_simd::multiversion! {
    /// Copies the selected rows of `x` (all when `rows` is `None`) into `dst`, converting to T,
    /// in the CPU's widest vector build.
    fn fill_inputs<T: MlpFloat>(dst: &mut [T], x: &Matrix, rows: Option<&[usize]>) {
        let c = x.cols();
        match rows {
            None => {
                for (d, &v) in dst.iter_mut().zip(x.as_slice()) {
                    *d = T::of_f64(v);
                }
            }
            Some(r) => {
                for (d, &i) in dst.chunks_exact_mut(c).zip(r) {
                    for (d, &v) in d.iter_mut().zip(x.row(i)) {
                        *d = T::of_f64(v);
                    }
                }
            }
        }
    }
}

smi_simd::multiversion! {
    /// g = gw (widened to f64) − θ/σ²_prior element by element (`inv_var` = 1/σ²_prior): the
    /// weights' log-likelihood gradient plus their Normal prior's, in the CPU's widest vector
    /// build.
    fn add_prior_gradient<T: MlpFloat>(gw: &[T], theta: &[f64], inv_var: f64, g: &mut [f64]) {
        for ((gi, &ti), &gwi) in g.iter_mut().zip(theta).zip(gw) {
            *gi = gwi.to_f64() - ti * inv_var;
        }
    }
}

/// Checks that every cell of `x` is finite; the error names the first bad row.
pub(crate) fn check_finite_rows(x: &Matrix, what: &str) -> Result<()> {
    for (i, r) in x.iter_rows().enumerate() {
        if let Some(j) = r.iter().position(|v| !v.is_finite()) {
            return Err(Error::Data(format!(
                "{what}: row {i}, column {j} is {} (must be finite)",
                r[j]
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_names_and_offsets() {
        let m = Mlp::new(&[3, 4, 5, 2], Activation::Relu).unwrap();
        let l = m.layout();
        let names: Vec<&str> = l.blocks().iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "layer1.weight",
                "layer1.bias",
                "layer2.weight",
                "layer2.bias",
                "out.weight",
                "out.bias"
            ]
        );
        assert_eq!(l.get("layer1.weight").unwrap().shape, vec![3, 4]);
        assert_eq!(l.get("layer2.weight").unwrap().range(), 16..36);
        assert_eq!(l.get("out.weight").unwrap().shape, vec![5, 2]);
        assert_eq!(l.get("out.bias").unwrap().range(), 51..53);
        assert_eq!(m.dim(), 53);
        assert_eq!(l.dim(), 53);
        // the wave and MNIST latent counts of docs/algorithms.md §7.2 / §7.4
        assert_eq!(Mlp::new(&[1, 5, 5, 1], Activation::Tanh).unwrap().dim(), 46);
        assert_eq!(
            Mlp::new(&[1, 100, 100, 1], Activation::Tanh).unwrap().dim(),
            10_401
        );
        assert_eq!(
            Mlp::new(&[784, 100, 10], Activation::Tanh).unwrap().dim(),
            79_510
        );
        assert_eq!(
            Mlp::new(&[784, 100, 100, 10], Activation::Tanh)
                .unwrap()
                .dim(),
            89_610
        );
        assert!(Mlp::new(&[3], Activation::Tanh).is_err());
        assert!(Mlp::new(&[3, 0, 1], Activation::Tanh).is_err());
    }

    #[test]
    fn forward_matches_naive() {
        let m = Mlp::new(&[2, 3, 2], Activation::Tanh).unwrap();
        let d = m.dim();
        let theta: Vec<f64> = (0..2 * (d + 1))
            .map(|i| ((i * 7 % 11) as f64 - 5.0) / 7.0)
            .collect();
        let x = Matrix::from_rows(&[vec![0.3, -1.2], vec![2.0, 0.5]]).unwrap();
        let mut out = vec![0.0; 2 * 2 * 2];
        m.forward::<f64>(&theta, d + 1, &x, &mut out).unwrap();
        for k in 0..2 {
            let t = &theta[k * (d + 1)..];
            for i in 0..2 {
                let xi = x.row(i);
                let h: Vec<f64> = (0..3)
                    .map(|j| (xi[0] * t[j] + xi[1] * t[3 + j] + t[6 + j]).tanh())
                    .collect();
                for o in 0..2 {
                    let want = h[0] * t[9 + o] + h[1] * t[11 + o] + h[2] * t[13 + o] + t[15 + o];
                    assert!((out[(k * 2 + i) * 2 + o] - want).abs() < 1e-12);
                }
            }
        }
        let mut out32 = vec![0.0; 8];
        m.forward::<f32>(&theta, d + 1, &x, &mut out32).unwrap();
        for (a, b) in out.iter().zip(&out32) {
            assert!((a - b).abs() < 1e-5);
        }
        assert!(m
            .forward::<f64>(&theta, d + 1, &x, &mut out32[..7])
            .is_err());
        let bad = Matrix::zeros(2, 3);
        assert!(m.forward::<f64>(&theta, d + 1, &bad, &mut out).is_err());
    }
}
