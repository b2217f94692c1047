//! The strided-batched SGEMMs of the device network (`net.rs`): their shapes, leading
//! dimensions and strides in cuBLAS's column-major terms, and the call.
//!
//! The network's buffers are row-major (θ: K×d with each layer's weight `[n_in, n_out]` at a
//! fixed offset; activations K×n×width), which cuBLAS reads as the transposes. The test below
//! runs these exact products with cuBLAS's semantics on the host, through a whole forward and
//! backward pass, against the CPU `Mlp`: it checks every shape, stride and transpose without a
//! GPU.

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{Gemm as _, GemmConfig, StridedBatchedConfig};
use cudarc::driver::{CudaView, CudaViewMut};

use super::context::{int, Gpu};
use super::error::CallContext;
use smi::Result;

/// One strided-batched product in cuBLAS's column-major terms: C_b = op(A_b)·op(B_b) for
/// b < `batch`, A_b at `a + b·sa` etc.
pub(crate) struct Product {
    ta: bool,
    tb: bool,
    m: usize,
    n: usize,
    k: usize,
    lda: usize,
    ldb: usize,
    ldc: usize,
    sa: usize,
    sb: usize,
    sc: usize,
    batch: usize,
}

impl Product {
    /// Layer (n_in → n_out) forward for K draws of n rows: row-major Z (n×n_out) = A (n×n_in) ·
    /// W (n_in×n_out), i.e. column-major Zᵀ = Wᵀ·Aᵀ, with W read in place from each draw's row
    /// of θ (ld n_out, stride d) and A the draw's activations (stride 0 for a shared input).
    pub(crate) fn forward(
        n_in: usize,
        n_out: usize,
        d: usize,
        k: usize,
        n: usize,
        shared_input: bool,
    ) -> Self {
        Product {
            ta: false,
            tb: false,
            m: n_out,
            n,
            k: n_in,
            lda: n_out,
            ldb: n_in,
            ldc: n_out,
            sa: d,
            sb: if shared_input { 0 } else { n * n_in },
            sc: n * n_out,
            batch: k,
        }
    }

    /// The weight gradient gW (n_in×n_out, row-major) = Aᵀ·δ: column-major gWᵀ = δᵀ·A, written
    /// in place into each draw's gradient row (stride d).
    pub(crate) fn weight_grad(
        n_in: usize,
        n_out: usize,
        d: usize,
        k: usize,
        n: usize,
        shared_input: bool,
    ) -> Self {
        Product {
            ta: false,
            tb: true,
            m: n_out,
            n: n_in,
            k: n,
            lda: n_out,
            ldb: n_in,
            ldc: n_out,
            sa: n * n_out,
            sb: if shared_input { 0 } else { n * n_in },
            sc: d,
            batch: k,
        }
    }

    /// The error of the layer below, δ_prev (n×n_in) = δ·Wᵀ: column-major δ_prevᵀ = W·δᵀ (the
    /// stored Wᵀ under op T).
    pub(crate) fn delta(n_in: usize, n_out: usize, d: usize, k: usize, n: usize) -> Self {
        Product {
            ta: true,
            tb: false,
            m: n_in,
            n,
            k: n_out,
            lda: n_out,
            ldb: n_out,
            ldc: n_in,
            sa: d,
            sb: n * n_out,
            sc: n * n_in,
            batch: k,
        }
    }

    pub(crate) fn run(
        &self,
        gpu: &Gpu,
        a: &CudaView<'_, f32>,
        b: &CudaView<'_, f32>,
        c: &mut CudaViewMut<'_, f32>,
    ) -> Result<()> {
        let op = |t: bool| {
            if t {
                cublasOperation_t::CUBLAS_OP_T
            } else {
                cublasOperation_t::CUBLAS_OP_N
            }
        };
        let stride = |v: usize| i64::try_from(v).unwrap_or(i64::MAX);
        let cfg = StridedBatchedConfig {
            gemm: GemmConfig {
                transa: op(self.ta),
                transb: op(self.tb),
                m: int(self.m, "GEMM m")?,
                n: int(self.n, "GEMM n")?,
                k: int(self.k, "GEMM k")?,
                alpha: 1.0f32,
                lda: int(self.lda, "GEMM lda")?,
                ldb: int(self.ldb, "GEMM ldb")?,
                beta: 0.0f32,
                ldc: int(self.ldc, "GEMM ldc")?,
            },
            batch_size: int(self.batch, "GEMM batch")?,
            stride_a: stride(self.sa),
            stride_b: stride(self.sb),
            stride_c: stride(self.sc),
        };
        // SAFETY: the callers size every buffer for `batch` matrices at these strides and
        // leading dimensions (the K×d θ and gradient rows, the K×n×width activations).
        unsafe { gpu.blas().gemm_strided_batched(cfg, a, b, c) }.ctx("cuBLAS SGEMM")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Activation, Head, Mlp, MlpFloat};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use smi::{Batch, Matrix, Rows};

    /// cuBLAS's sgemmStridedBatched with α = 1, β = 0: C_b = op(A_b)·op(B_b), column-major.
    fn gemm_host(p: &Product, a: &[f32], b: &[f32], c: &mut [f32]) {
        for bt in 0..p.batch {
            let (a, b) = (&a[bt * p.sa..], &b[bt * p.sb..]);
            let c = &mut c[bt * p.sc..];
            for j in 0..p.n {
                for i in 0..p.m {
                    let mut acc = 0.0f32;
                    for l in 0..p.k {
                        let av = if p.ta {
                            a[l + i * p.lda]
                        } else {
                            a[i + l * p.lda]
                        };
                        let bv = if p.tb {
                            b[j + l * p.ldb]
                        } else {
                            b[l + j * p.ldb]
                        };
                        acc += av * bv;
                    }
                    c[i + j * p.ldc] = acc;
                }
            }
        }
    }

    /// log-likelihood −½Σ out², ∂/∂out = −out.
    struct Square;
    impl Head for Square {
        fn log_lik<T: MlpFloat>(
            &self,
            _theta: &[f64],
            _rows: Option<&[usize]>,
            out: &[T],
            _scale: f64,
            dout: &mut [T],
            _grad: &mut [f64],
        ) -> f64 {
            let mut v = 0.0;
            for (d, &o) in dout.iter_mut().zip(out) {
                *d = T::of_f64(-o.to_f64());
                v -= 0.5 * o.to_f64() * o.to_f64();
            }
            v
        }
    }

    /// The device pass of `net.rs` (products + the elementwise kernels' arithmetic) on the
    /// host; returns the K×d gradient of Σ_k [−½ Σ out_k² − ½ |w_k|²].
    fn device_pass(
        mlp: &Mlp,
        theta: &[f32],
        x: &[f32],
        k: usize,
        n: usize,
        shared: bool,
    ) -> Vec<f32> {
        let (sizes, d) = (mlp.sizes(), mlp.dim());
        let layout = mlp.layout();
        let off: Vec<usize> = layout.blocks().iter().map(|b| b.range().start).collect();
        let act = |v: f32| match mlp.activation() {
            Activation::Tanh => v.tanh(),
            Activation::Relu => v.max(0.0),
        };
        let mut acts = vec![x.to_vec()];
        let last = sizes.len() - 2;
        for l in 0..=last {
            let (n_in, n_out) = (sizes[l], sizes[l + 1]);
            let mut z = vec![0.0; k * n * n_out];
            let p = Product::forward(n_in, n_out, d, k, n, l == 0 && shared);
            gemm_host(&p, &theta[off[2 * l]..], &acts[l], &mut z);
            for (t, v) in z.iter_mut().enumerate() {
                let (kk, j) = (t / (n * n_out), t % n_out);
                *v += theta[kk * d + off[2 * l + 1] + j];
                if l < last {
                    *v = act(*v);
                }
            }
            acts.push(z);
        }
        let mut delta: Vec<f32> = acts[last + 1].iter().map(|v| -v).collect();
        let mut grad = vec![0.0f32; k * d];
        for l in (0..=last).rev() {
            let (n_in, n_out) = (sizes[l], sizes[l + 1]);
            let p = Product::weight_grad(n_in, n_out, d, k, n, l == 0 && shared);
            gemm_host(&p, &delta, &acts[l], &mut grad[off[2 * l]..]);
            for kk in 0..k {
                for j in 0..n_out {
                    grad[kk * d + off[2 * l + 1] + j] =
                        (0..n).map(|r| delta[(kk * n + r) * n_out + j]).sum();
                }
            }
            if l == 0 {
                break;
            }
            let mut prev = vec![0.0; k * n * n_in];
            gemm_host(
                &Product::delta(n_in, n_out, d, k, n),
                &theta[off[2 * l]..],
                &delta,
                &mut prev,
            );
            for (dv, &a) in prev.iter_mut().zip(&acts[l]) {
                *dv *= match mlp.activation() {
                    Activation::Tanh => 1.0 - a * a,
                    Activation::Relu => f32::from(u8::from(a > 0.0)),
                };
            }
            delta = prev;
        }
        grad.iter_mut().zip(theta).for_each(|(g, t)| *g -= t);
        grad
    }

    #[test]
    fn the_device_products_give_the_cpu_gradients() {
        let (k, n, big_n) = (3, 5, 9);
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for (sizes, act) in [
            (&[3, 4, 2][..], Activation::Tanh),
            (&[3, 6, 4, 1], Activation::Relu),
            (&[5, 7, 3], Activation::Relu),
        ] {
            let mlp = Mlp::new(sizes, act).unwrap();
            let d = mlp.dim();
            let x = std::sync::Arc::new(Matrix::from_fn(big_n, sizes[0], |_, _| {
                rng.random_range(-1.0..1.0)
            }));
            let theta: Vec<f64> = (0..k * d).map(|_| rng.random_range(-0.8..0.8)).collect();
            let theta32: Vec<f32> = theta.iter().map(|&v| v as f32).collect();
            for shared in [false, true] {
                let rows: Vec<usize> = (0..if shared { n } else { k * n })
                    .map(|_| rng.random_range(0..big_n))
                    .collect();
                let batch = if shared {
                    Batch::shared(rows.clone(), big_n)
                } else {
                    Batch {
                        rows: Rows::PerDraw {
                            size: n,
                            rows: rows.clone(),
                        },
                        scale: 1.0,
                        jacobian: true,
                    }
                };
                let xs: Vec<f32> = rows
                    .iter()
                    .flat_map(|&r| x.row(r).iter().map(|&v| v as f32))
                    .collect();
                let got = device_pass(&mlp, &theta32, &xs, k, n, shared);
                let (mut lp, mut want) = (vec![0.0; k], vec![0.0; k * d]);
                mlp.log_density_and_grad::<f64, _>(
                    &theta, d, &x, &batch, 1.0, &Square, &mut lp, &mut want,
                )
                .unwrap();
                let scale = want.iter().fold(1.0f64, |a, v| a.max(v.abs()));
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    // f32 against f64 on sums of ≤ 7 products of values below ~3: 1e-5 of the
                    // largest entry covers the rounding
                    assert!(
                        (f64::from(*g) - w).abs() <= 1e-5 * scale,
                        "{sizes:?} shared={shared}: entry {i} {g} vs {w}"
                    );
                }
            }
        }
    }
}
