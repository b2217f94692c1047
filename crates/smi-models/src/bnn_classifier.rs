//! `BnnClassifier`: a Bayesian MLP with a softmax over C classes (the MNIST model, docs/algorithms.md §7.4).
//!
//! logits = MLP(x; θ), every weight and bias ~ N(0, `prior_scale`²) (default 1), and
//! y ~ Categorical(softmax(logits)).

use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};
use std::sync::Arc;

use crate::mlp::softmax::{categorical_log_lik, exp_in_place};
use crate::mlp::{Activation, Head, Mlp, MlpFloat, Precision};
use smi::Batch;
use smi::Layout;
use smi::LogDensity;
use smi::Matrix;
use smi::{Error, Result};

/// A Bayesian neural network classifier that owns its data (x: N × in, labels: N, each < C).
///
/// θ (length d = `mlp.dim()`) holds the [`Mlp`] weights; C = `mlp.output_dim()` ≥ 2. Draw k is
/// evaluated on `batch.rows_for_draw(k)`:
///
/// log p(θ) = Σ log N(w | 0, s²) + `batch.scale`·Σ_rows log softmax(MLP(x_i))\[label_i\].
///
/// The network runs in `f32` by default ([`BnnClassifier::with_precision`] switches to `f64`).
#[derive(Clone, Debug)]
pub struct BnnClassifier {
    mlp: Mlp,
    /// The inputs, shared with the network's workspaces (see [`Mlp::log_density_and_grad`]).
    x: Arc<Matrix>,
    labels: Vec<usize>,
    prior_scale: f64,
    precision: Precision,
}

/// The categorical likelihood head.
struct CategoricalHead<'a> {
    labels: &'a [usize],
    classes: usize,
}

impl Head for CategoricalHead<'_> {
    fn log_lik<T: MlpFloat>(
        &self,
        _theta: &[f64],
        rows: Option<&[usize]>,
        out: &[T],
        scale: f64,
        dout: &mut [T],
        _grad: &mut [f64],
    ) -> f64 {
        categorical_log_lik(
            out,
            self.classes,
            |i| self.labels[rows.map_or(i, |r| r[i])],
            scale,
            dout,
        )
    }
}

impl BnnClassifier {
    /// A model with network `mlp` (output width C ≥ 2), inputs `x` (N × in) and `labels` (N,
    /// each < C); prior scale 1, `f32` arithmetic.
    ///
    /// # Errors
    /// [`Error::Shape`] when `x` is not N × `mlp.input_dim()` or `labels` is not of length N;
    /// [`Error::InvalidSettings`] for fewer than two classes; [`Error::Data`] naming the row of
    /// a NaN/inf value or of a label ≥ C, or for empty data.
    pub fn new(mlp: Mlp, x: Matrix, labels: Vec<usize>) -> Result<Self> {
        let c = mlp.output_dim();
        if c < 2 {
            return Err(Error::invalid(
                "mlp",
                format!("a classifier needs at least 2 outputs (classes), got {c}"),
            ));
        }
        crate::bnn_shared::check_data("BnnClassifier", &mlp, &x, ("labels", labels.len()))?;
        if let Some(i) = labels.iter().position(|&l| l >= c) {
            return Err(Error::Data(format!(
                "BnnClassifier labels: row {i} has label {} but there are {c} classes",
                labels[i]
            )));
        }
        Ok(BnnClassifier {
            mlp,
            x: Arc::new(x),
            labels,
            prior_scale: 1.0,
            precision: Precision::F32,
        })
    }

    /// The MNIST model of docs/algorithms.md §7.4: in → 100 (→ 100) → 10 tanh with in = `x.cols()` (784
    /// for flattened images scaled to [0, 1]) and `hidden_layers` hidden layers of 100 (1:
    /// 79 510 latents, 2: 89 610), N(0, 1) priors.
    ///
    /// # Errors
    /// As [`BnnClassifier::new`]; [`Error::InvalidSettings`] for `hidden_layers == 0`.
    pub fn mnist(x: Matrix, labels: Vec<usize>, hidden_layers: usize) -> Result<Self> {
        if hidden_layers == 0 {
            return Err(Error::invalid(
                "hidden_layers",
                "the MNIST network has 1 or 2 hidden layers",
            ));
        }
        let mut sizes = vec![x.cols()];
        sizes.extend(std::iter::repeat_n(100, hidden_layers));
        sizes.push(10);
        let mlp = Mlp::new(&sizes, Activation::Tanh)?;
        BnnClassifier::new(mlp, x, labels)
    }

    crate::bnn_shared::common_methods!();

    /// C, the number of classes.
    pub fn num_classes(&self) -> usize {
        self.mlp.output_dim()
    }

    /// The labels (N).
    pub fn labels(&self) -> &[usize] {
        &self.labels
    }

    /// Class probabilities of K = `theta.len() / dim()` draws at the n rows of `x` (n × in):
    /// a (K·n) × C matrix whose row `k·n + i` is softmax(MLP(x_i; θ_k)). Runs in the model's
    /// precision; the softmax is in `f64`.
    ///
    /// # Errors
    /// [`Error::Shape`] when `theta` is not K × d or `x` has the wrong width.
    pub fn predict_proba(&self, theta: &[f64], x: &Matrix) -> Result<Matrix> {
        let mut out = self.mlp.forward_in(self.precision, theta, self.dim(), x)?;
        let c = self.num_classes();
        let rows = out.len() / c;
        for z in out.chunks_exact_mut(c) {
            let m = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            z.iter_mut().for_each(|v| *v -= m);
        }
        exp_in_place(&mut out);
        for z in out.chunks_exact_mut(c) {
            let sum: f64 = z.iter().sum();
            z.iter_mut().for_each(|v| *v /= sum);
        }
        Matrix::from_vec(rows, c, out)
    }
}

impl LogDensity for BnnClassifier {
    /// `mlp.dim()`.
    fn dim(&self) -> usize {
        self.mlp.dim()
    }

    fn num_data(&self) -> usize {
        self.x.rows()
    }

    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        let d = self.dim();
        let head = CategoricalHead {
            labels: &self.labels,
            classes: self.num_classes(),
        };
        let (x, s) = (&self.x, self.prior_scale);
        match self.precision {
            Precision::F32 => self
                .mlp
                .log_density_and_grad::<f32, _>(theta, d, x, batch, s, &head, logp, grad),
            Precision::F64 => self
                .mlp
                .log_density_and_grad::<f64, _>(theta, d, x, batch, s, &head, logp, grad),
        }
    }

    /// The network's blocks (see [`Mlp::layout`]).
    fn layout(&self) -> Layout {
        self.mlp.layout()
    }

    /// Every weight and bias from N(0, s²).
    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        if out.len() != self.dim() {
            return Err(Error::shape("sample_prior output", self.dim(), out.len()));
        }
        for v in out.iter_mut() {
            let z: f64 = StandardNormal.sample(rng);
            *v = self.prior_scale * z;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mlp::LN_SQRT_2PI;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use smi::Rows;

    fn data(n: usize, p: usize, c: usize, seed: u64) -> (Matrix, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = Matrix::from_fn(n, p, |_, _| rng.random_range(0.0..1.0));
        let labels = (0..n).map(|_| rng.random_range(0..c)).collect();
        (x, labels)
    }

    fn random_theta(k: usize, d: usize, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..k * d).map(|_| rng.random_range(-1.0..1.0)).collect()
    }

    fn check_gradient(model: &BnnClassifier, theta: &[f64], batch: &Batch) {
        let d = model.dim();
        let k = theta.len() / d;
        let (mut lp, mut g) = (vec![0.0; k], vec![0.0; k * d]);
        model
            .log_density_and_grad(theta, batch, &mut lp, &mut g)
            .unwrap();
        let mut th = theta.to_vec();
        let (mut lp2, mut g2) = (vec![0.0; k], vec![0.0; k * d]);
        let h = 1e-5;
        let mut worst = 0.0f64;
        for j in 0..d {
            let mut fd = vec![0.0; k];
            for sign in [1.0, -1.0] {
                for kk in 0..k {
                    th[kk * d + j] = theta[kk * d + j] + sign * h;
                }
                model
                    .log_density_and_grad(&th, batch, &mut lp2, &mut g2)
                    .unwrap();
                for kk in 0..k {
                    fd[kk] += sign * lp2[kk] / (2.0 * h);
                }
            }
            for kk in 0..k {
                th[kk * d + j] = theta[kk * d + j];
                let a = g[kk * d + j];
                worst = worst.max((a - fd[kk]).abs() / a.abs().max(fd[kk].abs()).max(1.0));
            }
        }
        assert!(worst < 1e-5, "worst relative gradient error {worst}");
    }

    #[test]
    fn gradients_match_finite_differences() {
        let (n, k) = (25, 3);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let rows: Vec<usize> = (0..k * 6).map(|_| rng.random_range(0..n)).collect();
        let per = Batch {
            rows: Rows::PerDraw { size: 6, rows },
            scale: n as f64 / 6.0,
            jacobian: true,
        };
        for act in [Activation::Tanh, Activation::Relu] {
            for sizes in [&[4, 5, 3][..], &[4, 5, 6, 3][..]] {
                let (x, labels) = data(n, 4, 3, 1);
                let model = BnnClassifier::new(Mlp::new(sizes, act).unwrap(), x, labels)
                    .unwrap()
                    .with_precision(Precision::F64)
                    .with_prior_scale(0.8)
                    .unwrap();
                let theta = random_theta(k, model.dim(), 2);
                for batch in [
                    Batch::full(),
                    per.clone(),
                    Batch::shared(vec![2, 7, 7, 0], n),
                ] {
                    check_gradient(&model, &theta, &batch);
                }
            }
        }
    }

    #[test]
    fn predict_proba_reproduces_the_log_likelihood() {
        let (x, labels) = data(12, 5, 4, 3);
        let model = BnnClassifier::new(
            Mlp::new(&[5, 7, 4], Activation::Tanh).unwrap(),
            x.clone(),
            labels.clone(),
        )
        .unwrap()
        .with_precision(Precision::F64);
        let (k, d) = (3, model.dim());
        let theta = random_theta(k, d, 4);
        let (mut lp, mut g) = (vec![0.0; k], vec![0.0; k * d]);
        model
            .log_density_and_grad(&theta, &Batch::full(), &mut lp, &mut g)
            .unwrap();
        let p = model.predict_proba(&theta, &x).unwrap();
        assert_eq!((p.rows(), p.cols()), (k * 12, 4));
        for kk in 0..k {
            let ll: f64 = (0..12).map(|i| p.get(kk * 12 + i, labels[i]).ln()).sum();
            let prior: f64 = theta[kk * d..(kk + 1) * d]
                .iter()
                .map(|w| -0.5 * w * w - LN_SQRT_2PI)
                .sum();
            assert!((lp[kk] - ll - prior).abs() < 1e-9 * lp[kk].abs());
            for i in 0..12 {
                let s: f64 = p.row(kk * 12 + i).iter().sum();
                assert!((s - 1.0).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn f32_and_f64_agree_on_an_mnist_sized_net() {
        let n = 300;
        let (x, labels) = data(n, 784, 10, 6);
        let m32 = BnnClassifier::mnist(x, labels, 1).unwrap();
        assert_eq!(m32.dim(), 79_510);
        let m64 = m32.clone().with_precision(Precision::F64);
        let (k, d) = (2, m32.dim());
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let theta: Vec<f64> = (0..k * d).map(|_| rng.random_range(-0.1..0.1)).collect();
        let batch = Batch::shared((0..128).map(|i| (i * 7) % n).collect(), n);
        let (mut l64, mut g64) = (vec![0.0; k], vec![0.0; k * d]);
        let (mut l32, mut g32) = (vec![0.0; k], vec![0.0; k * d]);
        m64.log_density_and_grad(&theta, &batch, &mut l64, &mut g64)
            .unwrap();
        m32.log_density_and_grad(&theta, &batch, &mut l32, &mut g32)
            .unwrap();
        for (a, b) in l64.iter().zip(&l32) {
            assert!((a - b).abs() < 1e-4 * a.abs(), "{a} {b}");
        }
        let scale = g64.iter().map(|v| v.abs()).fold(0.0, f64::max);
        for (a, b) in g64.iter().zip(&g32) {
            assert!((a - b).abs() < 1e-4 * scale, "{a} {b}");
        }
    }

    #[test]
    fn bad_data_is_rejected() {
        let mlp = Mlp::new(&[3, 4, 3], Activation::Tanh).unwrap();
        let (mut x, labels) = data(6, 3, 3, 1);
        let e = BnnClassifier::new(mlp.clone(), x.clone(), labels[..5].to_vec());
        assert!(matches!(e, Err(Error::Shape { .. })));
        let mut bad = labels.clone();
        bad[2] = 3;
        let e = BnnClassifier::new(mlp.clone(), x.clone(), bad).unwrap_err();
        assert!(matches!(&e, Error::Data(m) if m.contains("row 2")), "{e}");
        x.set(5, 0, f64::NEG_INFINITY);
        let e = BnnClassifier::new(mlp, x, labels.clone()).unwrap_err();
        assert!(matches!(&e, Error::Data(m) if m.contains("row 5")), "{e}");
        let one = Mlp::new(&[3, 4, 1], Activation::Tanh).unwrap();
        let (x, _) = data(6, 3, 3, 1);
        assert!(BnnClassifier::new(one, x.clone(), vec![0; 6]).is_err());
        assert!(BnnClassifier::mnist(x, labels, 0).is_err());
    }

    #[test]
    fn layout_and_prior_sampling() {
        let (x, labels) = data(6, 3, 3, 1);
        let m =
            BnnClassifier::new(Mlp::new(&[3, 4, 3], Activation::Tanh).unwrap(), x, labels).unwrap();
        assert_eq!(m.layout().dim(), m.dim());
        assert_eq!(m.layout().get("out.weight").unwrap().shape, vec![4, 3]);
        assert_eq!(m.num_classes(), 3);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut out = vec![0.0; m.dim()];
        m.sample_prior(&mut rng, &mut out).unwrap();
        assert!(out.iter().all(|v| v.is_finite()) && out.iter().any(|v| *v != 0.0));
    }
}
