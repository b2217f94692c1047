//! `BnnRegression`: a Bayesian MLP with a Gaussian likelihood (the wave and UCI models).
//!
//! y_loc = MLP(x; θ), every weight and bias ~ N(0, `prior_scale`²) (default 1), and
//! y ~ N(y_loc, σ) with either a known σ (wave, σ = 0.1, docs/algorithms.md §7.2) or a learned precision
//! prec ~ Gamma(shape 1, rate 0.1), σ = 1/√prec, sampled as u = log prec (docs/algorithms.md §7.3).

use rand::RngCore;
use rand_distr::{Distribution, Gamma, StandardNormal};
use serde::{Deserialize, Serialize};
use statrs::function::gamma::ln_gamma;
use std::sync::Arc;

use crate::mlp::{Activation, Head, Mlp, MlpFloat, Precision, LN_SQRT_2PI};
use smi::Batch;
use smi::Layout;
use smi::LogDensity;
use smi::Matrix;
use smi::{Error, Result};

/// The observation noise of a [`BnnRegression`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Noise {
    /// A known standard deviation σ > 0 (the wave model uses σ = 0.1).
    Fixed(f64),
    /// A learned precision prec ~ Gamma(`shape`, `rate`) (the UCI model uses shape 1, rate 0.1),
    /// σ = 1/√prec. θ holds u = log prec in its last column, named `"prec"`, and the model adds
    /// the log-Jacobian u when [`Batch::jacobian`] is set.
    GammaPrecision {
        /// Gamma shape a > 0.
        shape: f64,
        /// Gamma rate b > 0.
        rate: f64,
    },
}

impl Noise {
    /// The UCI prior of docs/algorithms.md §7.3: prec ~ Gamma(shape 1, rate 0.1).
    pub fn uci() -> Self {
        Noise::GammaPrecision {
            shape: 1.0,
            rate: 0.1,
        }
    }

    fn validate(self) -> Result<()> {
        let ok = |v: f64| v > 0.0 && v.is_finite();
        match self {
            Noise::Fixed(s) if !ok(s) => Err(Error::invalid(
                "noise",
                format!("the noise scale must be positive and finite, got {s}"),
            )),
            Noise::GammaPrecision { shape, rate } if !ok(shape) || !ok(rate) => {
                Err(Error::invalid(
                    "noise",
                    format!("Gamma shape and rate must be positive, got {shape} and {rate}"),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Predictions of a [`BnnRegression`] for K draws at n points.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegressionPrediction {
    /// Mean of y: K × n, row k for draw k.
    pub y_loc: Matrix,
    /// Noise standard deviation of each draw (length K): σ, or 1/√prec with a learned precision.
    pub noise_scale: Vec<f64>,
}

/// A Bayesian neural network regression model that owns its data (x: N × in, y: N).
///
/// θ (length d) holds the [`Mlp`] weights, then u = log prec when the noise is
/// [`Noise::GammaPrecision`]. Draw k is evaluated on `batch.rows_for_draw(k)`:
///
/// log p(θ) = Σ log N(w | 0, s²) + `batch.scale`·Σ_rows log N(y_i | MLP(x_i), σ)
///            [+ log Gamma(prec | a, b) + u (Jacobian, if `batch.jacobian`)].
///
/// The network runs in `f32` by default ([`BnnRegression::with_precision`] switches to `f64`).
#[derive(Clone, Debug)]
pub struct BnnRegression {
    mlp: Mlp,
    /// The inputs, shared with the network's workspaces (see [`Mlp::log_density_and_grad`]).
    x: Arc<Matrix>,
    y: Vec<f64>,
    noise: Noise,
    prior_scale: f64,
    precision: Precision,
}

/// The Gaussian likelihood head.
struct GaussianHead<'a> {
    y: &'a [f64],
    noise: Noise,
    jacobian: bool,
    prec_index: usize,
}

impl Head for GaussianHead<'_> {
    fn log_lik<T: MlpFloat>(
        &self,
        theta: &[f64],
        rows: Option<&[usize]>,
        out: &[T],
        scale: f64,
        dout: &mut [T],
        grad: &mut [f64],
    ) -> f64 {
        let n = out.len();
        let mut ss = 0.0;
        let (prec, log_prec) = match self.noise {
            Noise::Fixed(s) => (1.0 / (s * s), -2.0 * s.ln()),
            Noise::GammaPrecision { .. } => {
                let u = theta[self.prec_index];
                (u.exp(), u)
            }
        };
        let c = scale * prec;
        for i in 0..n {
            let yi = self.y[rows.map_or(i, |r| r[i])];
            let r = yi - out[i].to_f64();
            ss += r * r;
            dout[i] = T::of_f64(c * r);
        }
        let nf = n as f64;
        let ll = scale * (nf * (0.5 * log_prec - LN_SQRT_2PI) - 0.5 * prec * ss);
        match self.noise {
            Noise::Fixed(_) => ll,
            Noise::GammaPrecision { shape, rate } => {
                let u = log_prec;
                let mut lp =
                    ll + shape * rate.ln() - ln_gamma(shape) + (shape - 1.0) * u - rate * prec;
                let mut g = scale * (0.5 * nf - 0.5 * prec * ss) + (shape - 1.0) - rate * prec;
                if self.jacobian {
                    lp += u;
                    g += 1.0;
                }
                grad[self.prec_index] += g;
                lp
            }
        }
    }
}

impl BnnRegression {
    /// A model with network `mlp` (output width 1), inputs `x` (N × in), targets `y` (N) and
    /// `noise`; prior scale 1, `f32` arithmetic.
    ///
    /// # Errors
    /// [`Error::Shape`] when `x` is not N × `mlp.input_dim()`, `y` is not of length N or the
    /// network's output width is not 1; [`Error::Data`] naming the row of a NaN/inf value or for
    /// empty data; [`Error::InvalidSettings`] for a non-positive noise setting.
    pub fn new(mlp: Mlp, x: Matrix, y: Vec<f64>, noise: Noise) -> Result<Self> {
        if mlp.output_dim() != 1 {
            return Err(Error::shape(
                "BnnRegression network output width",
                1,
                mlp.output_dim(),
            ));
        }
        crate::bnn_shared::check_data("BnnRegression", &mlp, &x, ("targets y", y.len()))?;
        if let Some(i) = y.iter().position(|v| !v.is_finite()) {
            return Err(Error::Data(format!(
                "BnnRegression targets y: row {i} is {} (must be finite)",
                y[i]
            )));
        }
        noise.validate()?;
        Ok(BnnRegression {
            mlp,
            x: Arc::new(x),
            y,
            noise,
            prior_scale: 1.0,
            precision: Precision::F32,
        })
    }

    /// The 1-D wave model of docs/algorithms.md §7.2: 1 → h → h → 1 tanh (h = 5 "low" or 100 "high"),
    /// N(0, 1) priors, known noise σ = 0.1. `x` must be N × 1.
    ///
    /// # Errors
    /// As [`BnnRegression::new`]; [`Error::InvalidSettings`] for `hidden == 0`.
    pub fn wave(x: Matrix, y: Vec<f64>, hidden: usize) -> Result<Self> {
        let mlp = Mlp::new(&[1, hidden, hidden, 1], Activation::Tanh)?;
        BnnRegression::new(mlp, x, y, Noise::Fixed(0.1))
    }

    /// The UCI model of docs/algorithms.md §7.3: in → 50 → 50 → 1 relu with in = `x.cols()`, N(0, 1)
    /// priors, prec ~ Gamma(1, 0.1) learned as u = log prec (d = 50·in + 2651 + 1).
    ///
    /// # Errors
    /// As [`BnnRegression::new`]; [`Error::InvalidSettings`] when `x` has no column.
    pub fn uci(x: Matrix, y: Vec<f64>) -> Result<Self> {
        let mlp = Mlp::new(&[x.cols(), 50, 50, 1], Activation::Relu)?;
        BnnRegression::new(mlp, x, y, Noise::uci())
    }

    crate::bnn_shared::common_methods!();

    /// The noise model.
    pub fn noise(&self) -> Noise {
        self.noise
    }

    /// The targets (N).
    pub fn y(&self) -> &[f64] {
        &self.y
    }

    /// y_loc and the noise scale of K = `theta.len() / dim()` draws at the n rows of `x`
    /// (n × in), in the model's precision.
    ///
    /// # Errors
    /// [`Error::Shape`] when `theta` is not K × d or `x` has the wrong width.
    pub fn predict(&self, theta: &[f64], x: &Matrix) -> Result<RegressionPrediction> {
        let d = self.dim();
        let out = self.mlp.forward_in(self.precision, theta, d, x)?;
        let (k, n) = (theta.len() / d, x.rows());
        let noise_scale = theta
            .chunks_exact(d)
            .map(|t| match self.noise {
                Noise::Fixed(s) => s,
                Noise::GammaPrecision { .. } => (-0.5 * t[d - 1]).exp(),
            })
            .collect();
        Ok(RegressionPrediction {
            y_loc: Matrix::from_vec(k, n, out)?,
            noise_scale,
        })
    }
}

impl LogDensity for BnnRegression {
    /// `mlp.dim()`, plus 1 for a learned precision.
    fn dim(&self) -> usize {
        self.mlp.dim() + usize::from(matches!(self.noise, Noise::GammaPrecision { .. }))
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
        let head = GaussianHead {
            y: &self.y,
            noise: self.noise,
            jacobian: batch.jacobian,
            prec_index: d - 1,
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

    /// The network's blocks (see [`Mlp::layout`]), then `"prec"` (shape `[1]`, holding
    /// u = log prec) with a learned precision.
    fn layout(&self) -> Layout {
        let mut l = self.mlp.layout();
        if matches!(self.noise, Noise::GammaPrecision { .. }) {
            l.push("prec", vec![1]);
        }
        l
    }

    /// Weights from N(0, s²); u = log prec with prec from Gamma(shape, rate).
    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        let d = self.dim();
        if out.len() != d {
            return Err(Error::shape("sample_prior output", d, out.len()));
        }
        let nw = self.mlp.dim();
        for v in &mut out[..nw] {
            let z: f64 = StandardNormal.sample(rng);
            *v = self.prior_scale * z;
        }
        if let Noise::GammaPrecision { shape, rate } = self.noise {
            let g = Gamma::new(shape, 1.0 / rate)
                .map_err(|e| Error::invalid("noise", format!("bad Gamma prior: {e}")))?;
            out[d - 1] = g.sample(rng).max(f64::MIN_POSITIVE).ln();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use smi::Rows;

    fn data(n: usize, p: usize, seed: u64) -> (Matrix, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = Matrix::from_fn(n, p, |_, _| rng.random_range(-1.5..1.5));
        let y = (0..n)
            .map(|i| x.row(i).iter().sum::<f64>().sin() + 0.3)
            .collect();
        (x, y)
    }

    fn random_theta(k: usize, d: usize, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..k * d).map(|_| rng.random_range(-1.0..1.0)).collect()
    }

    /// Central differences of log p for every coordinate of draws `k` of `theta`.
    fn check_gradient(model: &dyn LogDensity, theta: &[f64], batch: &Batch) {
        let d = model.dim();
        let k = theta.len() / d;
        let mut lp = vec![0.0; k];
        let mut g = vec![0.0; k * d];
        model
            .log_density_and_grad(theta, batch, &mut lp, &mut g)
            .unwrap();
        let mut th = theta.to_vec();
        let (mut lp2, mut g2) = (vec![0.0; k], vec![0.0; k * d]);
        let h = 1e-5;
        let mut worst = 0.0f64;
        let mut at = (0, 0, 0.0, 0.0);
        for j in 0..d {
            let mut fd = vec![0.0; k];
            for (sign, w) in [(1.0, 1.0), (-1.0, -1.0)] {
                for kk in 0..k {
                    th[kk * d + j] = theta[kk * d + j] + sign * h;
                }
                model
                    .log_density_and_grad(&th, batch, &mut lp2, &mut g2)
                    .unwrap();
                for kk in 0..k {
                    fd[kk] += w * lp2[kk] / (2.0 * h);
                }
            }
            for kk in 0..k {
                th[kk * d + j] = theta[kk * d + j];
                let a = g[kk * d + j];
                let err = (a - fd[kk]).abs() / (a.abs().max(fd[kk].abs()).max(1.0));
                if err > worst {
                    worst = err;
                    at = (kk, j, a, fd[kk]);
                }
            }
        }
        assert!(
            worst < 1e-5,
            "worst relative gradient error {worst} at (draw, coordinate, analytic, fd) = {at:?}"
        );
    }

    fn batches(n: usize, k: usize) -> Vec<Batch> {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let b = 7;
        let rows: Vec<usize> = (0..k * b).map(|_| rng.random_range(0..n)).collect();
        let per = Batch {
            rows: Rows::PerDraw { size: b, rows },
            scale: n as f64 / b as f64,
            jacobian: true,
        };
        let mut per_nj = per.clone();
        per_nj.jacobian = false;
        let mut shared = Batch::shared(vec![3, 1, 4, 1, 5], n);
        shared.jacobian = false;
        vec![Batch::full(), per, per_nj, shared]
    }

    #[test]
    fn gradients_match_finite_differences() {
        let k = 3;
        // [3, 6, 5, 1]: products and the fused single-output layer; [1, 40, 1]: the fused
        // one-input/one-output pass (40 columns = a full block of 32 and a ragged one);
        // [1, 7, 3, 1]: the fused one-input first layer below a product layer; [2, 59, 1]: the
        // single-output layer's column blocks of every width (59 = 32 + 16 + 8 + 3).
        for sizes in [&[3, 6, 5, 1][..], &[1, 40, 1], &[1, 7, 3, 1], &[2, 59, 1]] {
            for act in [Activation::Tanh, Activation::Relu] {
                for noise in [Noise::Fixed(0.3), Noise::uci()] {
                    check_architecture(sizes, act, noise, k);
                }
            }
        }
    }

    fn check_architecture(sizes: &[usize], act: Activation, noise: Noise, k: usize) {
        let (x, y) = data(20, sizes[0], 1);
        let mlp = Mlp::new(sizes, act).unwrap();
        let model = BnnRegression::new(mlp, x, y, noise)
            .unwrap()
            .with_precision(Precision::F64)
            .with_prior_scale(1.3)
            .unwrap();
        // relu has kinks: central differences with h = 1e-5 are only valid when no
        // pre-activation lies within 1e-5 of 0. Seeds 2 and 4 put one there for [1, 40, 1]
        // (a pre-activation of 3e-6; the unfused code fails identically); seed 3 does not for
        // any architecture here (nor do 5–8, 11–13).
        let theta = random_theta(k, model.dim(), 3);
        for batch in batches(20, k) {
            check_gradient(&model, &theta, &batch);
        }
    }

    #[test]
    fn gamma_shape_other_than_one() {
        let (x, y) = data(10, 2, 3);
        let mlp = Mlp::new(&[2, 4, 1], Activation::Tanh).unwrap();
        let noise = Noise::GammaPrecision {
            shape: 2.5,
            rate: 0.7,
        };
        let model = BnnRegression::new(mlp, x, y, noise)
            .unwrap()
            .with_precision(Precision::F64);
        check_gradient(&model, &random_theta(2, model.dim(), 4), &Batch::full());
    }

    #[test]
    fn layout_ends_with_prec() {
        let (x, y) = data(10, 13, 3);
        let m = BnnRegression::uci(x, y).unwrap();
        assert_eq!(m.dim(), 13 * 50 + 50 + 50 * 50 + 50 + 50 + 1 + 1);
        let l = m.layout();
        assert_eq!(l.dim(), m.dim());
        let p = l.get("prec").unwrap();
        assert_eq!(p.range(), m.dim() - 1..m.dim());
        assert_eq!(l.get("layer2.weight").unwrap().shape, vec![50, 50]);
        let (x, y) = data(10, 1, 3);
        let w = BnnRegression::wave(x, y, 5).unwrap();
        assert_eq!(w.dim(), 46);
        assert!(w.layout().get("prec").is_none());
        assert_eq!(w.num_data(), 10);
    }

    #[test]
    fn bad_data_is_rejected() {
        let mlp = Mlp::new(&[2, 3, 1], Activation::Relu).unwrap();
        let (mut x, y) = data(5, 2, 1);
        x.set(3, 1, f64::NAN);
        let e = BnnRegression::new(mlp.clone(), x, y.clone(), Noise::Fixed(1.0)).unwrap_err();
        assert!(matches!(&e, Error::Data(m) if m.contains("row 3")), "{e}");
        let (x, mut y2) = data(5, 2, 1);
        y2[4] = f64::INFINITY;
        let e = BnnRegression::new(mlp.clone(), x.clone(), y2, Noise::Fixed(1.0)).unwrap_err();
        assert!(matches!(&e, Error::Data(m) if m.contains("row 4")), "{e}");
        let e = BnnRegression::new(mlp.clone(), x.clone(), y[..4].to_vec(), Noise::Fixed(1.0));
        assert!(matches!(e, Err(Error::Shape { .. })));
        let (x3, y3) = data(5, 3, 1);
        let e = BnnRegression::new(mlp.clone(), x3, y3, Noise::Fixed(1.0));
        assert!(matches!(e, Err(Error::Shape { .. })));
        let wide = Mlp::new(&[2, 3, 2], Activation::Relu).unwrap();
        let e = BnnRegression::new(wide, x.clone(), y.clone(), Noise::Fixed(1.0));
        assert!(matches!(e, Err(Error::Shape { .. })));
        let e = BnnRegression::new(mlp.clone(), x.clone(), y.clone(), Noise::Fixed(0.0));
        assert!(matches!(e, Err(Error::InvalidSettings { .. })));
        let m = BnnRegression::new(mlp, x, y, Noise::Fixed(1.0)).unwrap();
        assert!(m.clone().with_prior_scale(-1.0).is_err());
        // batch rows out of range and wrong buffer sizes
        let d = m.dim();
        let theta = vec![0.1; 2 * d];
        let (mut lp, mut g) = (vec![0.0; 2], vec![0.0; 2 * d]);
        let bad = Batch::shared(vec![0, 5], 5);
        assert!(matches!(
            m.log_density_and_grad(&theta, &bad, &mut lp, &mut g),
            Err(Error::Data(_))
        ));
        assert!(m
            .log_density_and_grad(&theta, &Batch::full(), &mut lp[..1], &mut g)
            .is_err());
    }

    #[test]
    fn predict_reproduces_the_log_likelihood() {
        for noise in [Noise::Fixed(0.1), Noise::uci()] {
            let (x, y) = data(15, 2, 5);
            let mlp = Mlp::new(&[2, 8, 8, 1], Activation::Relu).unwrap();
            let model = BnnRegression::new(mlp, x.clone(), y.clone(), noise)
                .unwrap()
                .with_precision(Precision::F64);
            let d = model.dim();
            let k = 4;
            let theta = random_theta(k, d, 6);
            let batch = Batch {
                jacobian: false,
                ..Batch::full()
            };
            let (mut lp, mut g) = (vec![0.0; k], vec![0.0; k * d]);
            model
                .log_density_and_grad(&theta, &batch, &mut lp, &mut g)
                .unwrap();
            let pred = model.predict(&theta, &x).unwrap();
            assert_eq!((pred.y_loc.rows(), pred.y_loc.cols()), (k, 15));
            let nw = model.mlp().dim();
            for kk in 0..k {
                let t = &theta[kk * d..(kk + 1) * d];
                let s = pred.noise_scale[kk];
                let ll: f64 = (0..15)
                    .map(|i| {
                        let r = (y[i] - pred.y_loc.get(kk, i)) / s;
                        -0.5 * r * r - s.ln() - LN_SQRT_2PI
                    })
                    .sum();
                let prior: f64 = t[..nw].iter().map(|w| -0.5 * w * w - LN_SQRT_2PI).sum();
                let extra = match noise {
                    Noise::Fixed(_) => 0.0,
                    Noise::GammaPrecision { rate, .. } => rate.ln() - rate * t[d - 1].exp(),
                };
                let want = ll + prior + extra;
                assert!(
                    (lp[kk] - want).abs() < 1e-9 * want.abs().max(1.0),
                    "{} {want}",
                    lp[kk]
                );
            }
        }
    }

    #[test]
    fn f32_and_f64_agree() {
        // the f32 kernels are separate code (AVX2/FMA builds where available): compare them
        // with f64 on every fused path
        let (x, y) = data(50, 13, 7);
        f32_matches_f64(BnnRegression::uci(x, y).unwrap());
        for sizes in [&[1, 40, 1][..], &[1, 7, 3, 1], &[2, 9, 1]] {
            for act in [Activation::Tanh, Activation::Relu] {
                let (x, y) = data(50, sizes[0], 7);
                let mlp = Mlp::new(sizes, act).unwrap();
                f32_matches_f64(BnnRegression::new(mlp, x, y, Noise::uci()).unwrap());
            }
        }
    }

    fn f32_matches_f64(model: BnnRegression) {
        let m64 = model.with_precision(Precision::F64);
        let m32 = m64.clone().with_precision(Precision::F32);
        let d = m64.dim();
        let k = 5;
        let theta = random_theta(k, d, 8);
        let batch = Batcher50::batch(k);
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

    struct Batcher50;
    impl Batcher50 {
        fn batch(k: usize) -> Batch {
            let mut rng = ChaCha8Rng::seed_from_u64(11);
            smi::Batcher::new(50, Some(20)).draw(&mut rng, k)
        }
    }

    #[test]
    fn sample_prior_has_the_prior_moments() {
        let (x, y) = data(5, 1, 1);
        let m = BnnRegression::new(
            Mlp::new(&[1, 3, 1], Activation::Tanh).unwrap(),
            x,
            y,
            Noise::uci(),
        )
        .unwrap()
        .with_prior_scale(2.0)
        .unwrap();
        let d = m.dim();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut out = vec![0.0; d];
        let n = 4000;
        let (mut sw, mut sp) = (0.0, 0.0);
        for _ in 0..n {
            m.sample_prior(&mut rng, &mut out).unwrap();
            sw += out[..d - 1].iter().map(|v| v * v).sum::<f64>() / (d - 1) as f64;
            sp += out[d - 1].exp();
        }
        // E w² = 4 (SE ≈ 4·√(2/(10·4000)) ≈ 0.03); E prec = shape/rate = 10 (SE ≈ 0.16).
        assert!((sw / n as f64 - 4.0).abs() < 0.15);
        assert!((sp / n as f64 - 10.0).abs() < 0.8);
        assert!(m.sample_prior(&mut rng, &mut out[..2]).is_err());
    }

    /// The inputs a call keeps for the next call on the same rows are never handed to another
    /// model's call: two models of the same shape on the same shared rows, evaluated one after
    /// the other on one thread (and the first again), each give what they give alone.
    #[test]
    fn kept_inputs_belong_to_their_own_model() {
        let (d, k) = (Mlp::new(&[3, 4, 1], Activation::Tanh).unwrap().dim() + 1, 2);
        let model = |seed| {
            let (x, y) = data(12, 3, seed);
            let mlp = Mlp::new(&[3, 4, 1], Activation::Tanh).unwrap();
            BnnRegression::new(mlp, x, y, Noise::uci()).unwrap()
        };
        let (a, b) = (model(1), model(2));
        let theta = random_theta(k, d, 3);
        let eval = |m: &BnnRegression, batch: &Batch| {
            let (mut lp, mut g) = (vec![0.0; k], vec![0.0; k * d]);
            m.log_density_and_grad(&theta, batch, &mut lp, &mut g)
                .unwrap();
            (lp, g)
        };
        // a pool of one new thread: every call below on it runs there, with that thread's
        // workspaces (and none kept from elsewhere)
        let one_thread = || {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap()
        };
        let rows = Batch::shared(vec![7, 2, 5, 5, 0], 12);
        let other = Batch::shared(vec![1, 2, 3, 4, 6], 12);
        let alone_b = one_thread().install(|| eval(&b, &rows));
        let alone_other = one_thread().install(|| eval(&a, &other));
        let (first_a, then_b, again_a, a_other) = one_thread().install(|| {
            (
                eval(&a, &rows),
                eval(&b, &rows),
                eval(&a, &rows),
                eval(&a, &other),
            )
        });
        assert_eq!(then_b, alone_b);
        assert_eq!(again_a, first_a);
        assert_eq!(a_other, alone_other);
        // the cases differ, so a stale copy would show
        assert_ne!(then_b.0, first_a.0);
        assert_ne!(a_other.0, first_a.0);
    }
}
