//! Preparing a fit: the split, standardisation, the model to fit, validation metrics and the
//! header parts prediction needs.

use rand::RngCore;
use smi::{Batch, Layout};

use super::*;

/// Training data after the split and standardisation.
pub(super) struct Prepared {
    pub(super) x_train: Matrix,
    pub(super) x_val: Option<Matrix>,
    /// Regression: standardised (or raw) targets; classification: class indices as f64.
    pub(super) y_train: Vec<f64>,
    /// Validation targets in original units (regression) or class indices.
    pub(super) y_val: Option<Vec<f64>>,
    pub(super) x_scaler: Scaler,
    pub(super) y_scaler: Option<Scaler>,
}

fn gather(x: &[f64], cols: usize, idx: &[usize]) -> Vec<f64> {
    idx.iter()
        .flat_map(|&r| x[r * cols..(r + 1) * cols].iter().copied())
        .collect()
}

/// Standardises `x` (row-major) with `s`; `what` names the rows in the error.
fn standardise(s: &Scaler, x: &mut [f64], what: &str) -> Result<()> {
    s.apply(x).map_err(|(r, c)| {
        anyhow!(
            "cannot standardise {what}: row {}, column {} lies too far from the training mean \
             (mean {}, std {})",
            r + 1,
            c + 1,
            s.mean[c],
            s.std[c]
        )
    })
}

/// Splits off `val` rows (if any) and standardises with the training rows' statistics
/// ([`Scaler::fit`], which cannot overflow).
pub(super) fn prepare(
    x: &[f64],
    y: &[f64],
    cols: usize,
    train: &[usize],
    val: Option<&[usize]>,
    scale_y: bool,
) -> Result<Prepared> {
    let mut xt = gather(x, cols, train);
    let x_scaler = Scaler::fit(&xt, train.len(), cols).context("the features")?;
    standardise(&x_scaler, &mut xt, "the training features")?;
    let mut yt: Vec<f64> = train.iter().map(|&r| y[r]).collect();
    let y_scaler = if scale_y {
        let s = Scaler::fit(&yt, yt.len(), 1).context("the target")?;
        standardise(&s, &mut yt, "the training targets")?;
        Some(s)
    } else {
        None
    };
    let (x_val, y_val) = match val {
        Some(v) => {
            let mut xv = gather(x, cols, v);
            standardise(&x_scaler, &mut xv, "the validation features")?;
            (
                Some(Matrix::from_vec(v.len(), cols, xv)?),
                Some(v.iter().map(|&r| y[r]).collect()),
            )
        }
        None => (None, None),
    };
    Ok(Prepared {
        x_train: Matrix::from_vec(train.len(), cols, xt)?,
        x_val,
        y_train: yt,
        y_val,
        x_scaler,
        y_scaler,
    })
}

/// The model to fit: network sizes, activation, task, prior scale and likelihood weight.
#[derive(Clone, Debug)]
pub(super) struct Spec {
    pub(super) task: Task,
    pub(super) sizes: Vec<usize>,
    pub(super) activation: Activation,
    /// s of the N(0, s²) prior on every weight and bias.
    pub(super) prior_scale: f64,
    /// 1/T: the log-likelihood is multiplied by it (1: the Bayesian posterior).
    pub(super) likelihood_weight: f64,
}

enum Net {
    Regression(BnnRegression),
    Classification(BnnClassifier),
}

/// The network model of a [`Spec`], its log-likelihood multiplied by the spec's weight (a
/// tempered posterior p(θ)·p(y | θ)^(1/T); the weight scales the mini-batch factor N/b, so the
/// prior and the noise prior are untouched).
pub(super) struct Model {
    net: Net,
    likelihood_weight: f64,
}

impl Model {
    pub(super) fn build(spec: &Spec, x: Matrix, y: &[f64]) -> Result<Self> {
        let mlp = Mlp::new(&spec.sizes, spec.activation).context("bad network")?;
        let net = match spec.task {
            Task::Regression => Net::Regression(
                BnnRegression::new(mlp, x, y.to_vec(), Noise::uci())
                    .and_then(|m| m.with_prior_scale(spec.prior_scale))
                    .context("cannot build the regression model")?,
            ),
            Task::Classification => Net::Classification(
                BnnClassifier::new(mlp, x, y.iter().map(|&v| v as usize).collect())
                    .and_then(|m| m.with_prior_scale(spec.prior_scale))
                    .context("cannot build the classifier")?,
            ),
        };
        if !(spec.likelihood_weight > 0.0 && spec.likelihood_weight.is_finite()) {
            bail!(
                "the likelihood weight 1/T must be positive and finite, got {}",
                spec.likelihood_weight
            );
        }
        Ok(Model {
            net,
            likelihood_weight: spec.likelihood_weight,
        })
    }

    fn inner(&self) -> &dyn LogDensity {
        match &self.net {
            Net::Regression(m) => m,
            Net::Classification(m) => m,
        }
    }

    pub(super) fn density(&self) -> &dyn LogDensity {
        self
    }
}

impl LogDensity for Model {
    fn dim(&self) -> usize {
        self.inner().dim()
    }

    fn num_data(&self) -> usize {
        self.inner().num_data()
    }

    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> smi::Result<()> {
        if self.likelihood_weight == 1.0 {
            return self.inner().log_density_and_grad(theta, batch, logp, grad);
        }
        let tempered = Batch {
            scale: batch.scale * self.likelihood_weight,
            ..batch.clone()
        };
        self.inner()
            .log_density_and_grad(theta, &tempered, logp, grad)
    }

    fn layout(&self) -> Layout {
        self.inner().layout()
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> smi::Result<()> {
        self.inner().sample_prior(rng, out)
    }
}

/// A header without the payload (filled by [`ModelFile::new`]).
fn empty_payload() -> Payload {
    Payload {
        kind: PayloadKind::Particles,
        guide: None,
        rows: 0,
        cols: 0,
        dim: 0,
        encoding: String::new(),
    }
}

/// Validation metrics of a fit (targets in original units / class indices).
pub(super) fn validate(
    spec: &Spec,
    prep: &Prepared,
    out: &Fit,
    draws: usize,
    seed: u64,
) -> Result<Option<Metrics>> {
    let (Some(x), Some(y)) = (&prep.x_val, &prep.y_val) else {
        return Ok(None);
    };
    let h = header_stub(spec, prep);
    Ok(Some(match spec.task {
        Task::Regression => {
            let o = predict::predict_regression(&h, &out.posterior, x, draws, 0.9, seed, Some(y))?;
            predict::regression_metrics(&o, y, 0.9)
        }
        Task::Classification => {
            let o = predict::predict_classes(&h, &out.posterior, x, draws, seed)?;
            let labels: Vec<usize> = y.iter().map(|&v| v as usize).collect();
            predict::class_metrics(&o, &labels)
        }
    }))
}

/// The parts of a header that prediction needs.
pub(super) fn header_stub(spec: &Spec, prep: &Prepared) -> Header {
    Header {
        magic: MAGIC.into(),
        format_version: FORMAT_VERSION,
        smi_version: crate::VERSION.into(),
        task: spec.task,
        method: String::new(),
        architecture: Architecture {
            sizes: spec.sizes.clone(),
            activation: spec.activation,
            noise: (spec.task == Task::Regression).then(Noise::uci),
            prior_scale: spec.prior_scale,
        },
        target: String::new(),
        features: Vec::new(),
        x_scaler: prep.x_scaler.clone(),
        y_scaler: prep.y_scaler.clone(),
        classes: None,
        settings: Settings {
            lr: None,
            lr_mode: String::new(),
            lr_grid: Vec::new(),
            max_steps: 0,
            particles: 0,
            elbo_draws: 0,
            batch_size: None,
            early_stopping: false,
            init_radius: 0.0,
            seed: 0,
            validation: None,
            nuts_warmup: 0,
            nuts_draws: 0,
            temperature: None,
            lr_schedule: Default::default(),
        },
        training: Training::default(),
        validation: None,
        estimator: None,
        payload: empty_payload(),
        checksum: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The likelihood weight 1/T multiplies the log-likelihood only: log p_w(θ) = log prior +
    /// w·log lik is linear in w, so equal steps in w give equal steps in log p (and ∇ log p).
    #[test]
    fn the_temperature_scales_the_likelihood_only() {
        let x = Matrix::from_fn(6, 2, |i, j| (i + j) as f64 / 5.0 - 0.5);
        let y: Vec<f64> = (0..6).map(|i| i as f64 / 3.0 - 1.0).collect();
        let eval = |w: f64| {
            let spec = Spec {
                task: Task::Regression,
                sizes: vec![2, 3, 1],
                activation: Activation::Tanh,
                prior_scale: 0.7,
                likelihood_weight: w,
            };
            let m = Model::build(&spec, x.clone(), &y).unwrap();
            let d = m.density().dim();
            let theta: Vec<f64> = (0..d).map(|k| (k as f64 * 0.37).sin()).collect();
            let (mut logp, mut grad) = (vec![0.0], vec![0.0; d]);
            m.density()
                .log_density_and_grad(&theta, &Batch::full(), &mut logp, &mut grad)
                .unwrap();
            (logp[0], grad)
        };
        let ((l1, g1), (l2, g2), (l3, g3)) = (eval(1.0), eval(2.0), eval(3.0));
        // Round-off only: the three evaluations differ in one multiplication per row (the
        // density sums in f64; the gradient runs back through the f32 network, hence 1e-5).
        assert!(((l3 - l2) - (l2 - l1)).abs() < 1e-9 * l1.abs().max(1.0));
        assert!(l2 != l1);
        for k in 0..g1.len() {
            assert!(((g3[k] - g2[k]) - (g2[k] - g1[k])).abs() < 1e-5 * g1[k].abs().max(1.0));
        }
        let bad = Spec {
            task: Task::Regression,
            sizes: vec![2, 3, 1],
            activation: Activation::Tanh,
            prior_scale: 1.0,
            likelihood_weight: f64::INFINITY,
        };
        assert!(Model::build(&bad, x.clone(), &y).is_err());
    }
}
