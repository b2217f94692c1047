//! Preparing a fit: the split, standardisation, the model to fit, validation metrics and the
//! header parts prediction needs.

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

/// The model to fit: network sizes, activation and task.
#[derive(Clone, Debug)]
pub(super) struct Spec {
    pub(super) task: Task,
    pub(super) sizes: Vec<usize>,
    pub(super) activation: Activation,
}

pub(super) enum Model {
    Regression(BnnRegression),
    Classification(BnnClassifier),
}

impl Model {
    pub(super) fn build(spec: &Spec, x: Matrix, y: &[f64]) -> Result<Self> {
        let mlp = Mlp::new(&spec.sizes, spec.activation).context("bad network")?;
        Ok(match spec.task {
            Task::Regression => Model::Regression(
                BnnRegression::new(mlp, x, y.to_vec(), Noise::uci())
                    .context("cannot build the regression model")?,
            ),
            Task::Classification => Model::Classification(
                BnnClassifier::new(mlp, x, y.iter().map(|&v| v as usize).collect())
                    .context("cannot build the classifier")?,
            ),
        })
    }

    pub(super) fn density(&self) -> &dyn LogDensity {
        match self {
            Model::Regression(m) => m,
            Model::Classification(m) => m,
        }
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
        smi_version: smi_experiments::records::VERSION.into(),
        task: spec.task,
        method: String::new(),
        architecture: Architecture {
            sizes: spec.sizes.clone(),
            activation: spec.activation,
            noise: (spec.task == Task::Regression).then(Noise::uci),
            prior_scale: 1.0,
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
        },
        training: Training::default(),
        validation: None,
        payload: empty_payload(),
        checksum: None,
    }
}
