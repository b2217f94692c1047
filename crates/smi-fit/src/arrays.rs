//! `smi fit` and `smi predict` on in-memory arrays: the pipeline behind the scikit-learn
//! estimators of the Python package (`smi.BNNRegressor`, `smi.BNNClassifier`).
//!
//! [`fit_arrays`] takes a row-major feature matrix and targets instead of a CSV file and runs
//! the same steps as [`crate::run`]: the option checks, the validation split, standardisation,
//! the default step budget ([`crate::sizing`]), the learning-rate search of `lr = auto`, the
//! fit and the validation metrics. It returns the [`ModelFile`] that `smi fit --save` would
//! write, so a model fitted here is read by `smi predict` and the other way round. It has no
//! time limit, checkpoints or Ctrl-C handler of its own; `interrupt` stops it between steps.

use std::time::Duration;

use smi::NoObserver;

use super::fitting::{
    check_args, search_lr, settings_record, temperature, training_record, unit_settings, Checked,
    Job, DEFAULT_ELBO_DRAWS,
};
use super::interrupt::Interrupt;
use super::predict::{predict_classes, predict_regression, ClassOutput, RegressionOutput};
use super::train::{train, Limits, Trained};
use super::*;

/// Training data as arrays.
#[derive(Clone, Debug)]
pub struct ArrayData<'a> {
    /// Features, row-major `rows × cols`, finite.
    pub x: &'a [f64],
    /// Rows.
    pub rows: usize,
    /// Feature columns.
    pub cols: usize,
    /// Regression: finite targets; classification: class indices `0..classes.len()` as f64.
    pub y: &'a [f64],
    /// `None` for regression; the class names (at least two) for classification.
    pub classes: Option<Vec<String>>,
    /// The feature names stored in the model file (`cols` of them).
    pub features: Vec<String>,
    /// The target name stored in the model file.
    pub target: String,
}

/// The options of [`fit_arrays`] (the `smi fit` options that apply to arrays).
#[derive(Clone, Debug)]
pub struct ArrayOptions {
    /// smi, svgd, asvgd, ovi, map or nuts.
    pub method: String,
    /// Hidden-layer widths; `None` (the default): `smi fit --hidden auto`, sized to the
    /// training rows by [`sizing::default_hidden`].
    pub hidden: Option<Vec<usize>>,
    /// Particles m (default 5).
    pub particles: usize,
    /// ELBO draws S per particle (default 10).
    pub elbo_draws: usize,
    /// Adam's learning rate; `None`: the search of `--lr auto`.
    pub lr: Option<f64>,
    /// Step budget; `None`: the default of [`crate::sizing`].
    pub max_steps: Option<u64>,
    /// Mini-batch rows (default 100).
    pub batch_size: usize,
    /// Held-out fraction for validation metrics (default none).
    pub validation: Option<f64>,
    /// Seed of the fit.
    pub seed: u64,
    /// Early stopping on the force norm (default on).
    pub early_stopping: bool,
    /// s of the N(0, s²) weight prior (default 1).
    pub prior_scale: f64,
    /// T, the likelihood temperature; `None` (the default): `smi fit`'s default for the method
    /// and task (SMI: 0.3 for regression, 0.2 for classification; the other methods: 1).
    pub temperature: Option<f64>,
    /// The learning-rate schedule (default constant).
    pub lr_schedule: crate::LrScheduleArg,
    /// The guide of SMI or OVI (`smi fit --guide`; `None`: mean-field Normal).
    pub guide: Option<String>,
}

impl Default for ArrayOptions {
    fn default() -> Self {
        ArrayOptions {
            method: "smi".into(),
            hidden: None,
            particles: 5,
            elbo_draws: DEFAULT_ELBO_DRAWS,
            lr: Some(5e-3),
            max_steps: None,
            batch_size: 100,
            validation: None,
            seed: 0,
            early_stopping: true,
            prior_scale: 1.0,
            temperature: None,
            lr_schedule: crate::LrScheduleArg::Constant,
            guide: None,
        }
    }
}

impl ArrayOptions {
    /// The `smi fit` options these stand for (no CSV or save path: arrays are fitted in memory).
    fn fit_args(&self, task: Task) -> FitArgs {
        let hidden = self.hidden.as_ref().map_or_else(
            || "auto".to_string(),
            |h| h.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
        );
        FitArgs {
            csv: PathBuf::new(),
            target: String::new(),
            features: None,
            task: Some(task),
            drop_missing: false,
            method: self.method.clone(),
            particles: self.particles,
            hidden,
            activation: None,
            max_steps: self.max_steps,
            lr: self.lr.map_or_else(|| "auto".into(), |v| v.to_string()),
            seed: self.seed,
            validation: self.validation,
            save: PathBuf::new(),
            elbo_draws: Some(self.elbo_draws),
            guide: self.guide.clone(),
            batch_size: self.batch_size,
            prior_scale: self.prior_scale,
            temperature: self.temperature,
            lr_schedule: self.lr_schedule,
            no_early_stop: !self.early_stopping,
            target_scaling: TargetScaling::Standardize,
            draws: 1000,
            nuts_warmup: 500,
            nuts_draws: 1000,
            max_time: None,
            checkpoint_every: 0.0,
            resume: false,
            progress_every: 5.0,
        }
    }
}

/// Checks the shapes and values of `d`; returns the task.
fn check_data(d: &ArrayData<'_>) -> Result<Task> {
    if d.rows == 0 || d.cols == 0 {
        bail!("X must have at least one row and one column");
    }
    if d.rows.checked_mul(d.cols) != Some(d.x.len()) {
        bail!("X has {} values, not {} × {}", d.x.len(), d.rows, d.cols);
    }
    if d.y.len() != d.rows {
        bail!("y has {} values for {} rows of X", d.y.len(), d.rows);
    }
    if d.features.len() != d.cols {
        bail!("{} feature names for {} columns", d.features.len(), d.cols);
    }
    if let Some(i) = d.x.iter().position(|v| !v.is_finite()) {
        bail!(
            "X holds a non-finite value at row {}, column {}",
            i / d.cols + 1,
            i % d.cols + 1
        );
    }
    match &d.classes {
        None => {
            if let Some(i) = d.y.iter().position(|v| !v.is_finite()) {
                bail!("y holds a non-finite value at row {}", i + 1);
            }
            Ok(Task::Regression)
        }
        Some(c) => {
            if c.len() < 2 {
                bail!("classification needs at least two classes, got {}", c.len());
            }
            let bad = |v: f64| !(v >= 0.0 && v.fract() == 0.0 && (v as usize) < c.len());
            if let Some(i) = d.y.iter().position(|&v| bad(v)) {
                bail!("y[{i}] = {} is not a class index below {}", d.y[i], c.len());
            }
            Ok(Task::Classification)
        }
    }
}

/// Fits a Bayesian network to `data` as `smi fit` would fit the same table, returning the model
/// file `smi fit --save` would write. `interrupt` (when raised) stops a variational fit at the
/// next step; the model is then returned as it is, with `training.stopped = "interrupted"`.
///
/// # Errors
/// Bad options or data, a failed fit, a fit that diverged (non-finite parameters).
pub fn fit_arrays(
    data: &ArrayData<'_>,
    options: &ArrayOptions,
    interrupt: &Interrupt,
) -> Result<ModelFile> {
    let task = check_data(data)?;
    let a = options.fit_args(task);
    let Checked {
        method,
        hidden,
        fixed_lr,
    } = check_args(&a)?;
    if options.elbo_draws == 0 {
        bail!("elbo_draws must be at least 1");
    }
    let (n, cols) = (data.rows, data.cols);
    let split = |frac: f64| -> Result<(Vec<usize>, Vec<usize>)> {
        train_test_split_indices(n, frac, 10).with_context(|| {
            format!(
                "--validation {frac}: cannot hold out {frac} of {n} rows for validation and \
                 keep training rows (too few rows?)"
            )
        })
    };
    let (train_rows, val) = match a.validation {
        Some(v) => split(v).map(|(tr, va)| (tr, Some(va)))?,
        None => ((0..n).collect(), None),
    };
    let t = temperature(&a, method, task);
    let mut sizes = vec![cols];
    sizes.extend(hidden.unwrap_or_else(|| sizing::default_hidden(train_rows.len())));
    sizes.push(data.classes.as_ref().map_or(1, Vec::len));
    let spec = Spec {
        task,
        sizes,
        activation: match task {
            Task::Regression => Activation::Relu,
            Task::Classification => Activation::Tanh,
        },
        prior_scale: a.prior_scale,
        likelihood_weight: 1.0 / t,
    };
    let max_steps = a.max_steps.unwrap_or_else(|| {
        let draws = sizing::draws_per_step(method, a.particles, options.elbo_draws);
        let dim = network_dim(&spec.sizes)
            .unwrap_or(usize::MAX)
            .saturating_add(usize::from(task == Task::Regression));
        sizing::default_max_steps(draws, train_rows.len().min(a.batch_size), dim)
    });
    let search = fixed_lr.is_none() && method != Method::Nuts;
    check_fit_memory(
        &a,
        method,
        &spec.sizes,
        options.elbo_draws,
        train_rows.len(),
        val.as_ref().map_or(n / 10, Vec::len),
        val.is_some() || search,
    )?;
    let scale_y = task == Task::Regression;
    let (x, y) = (data.x, data.y);
    let prep = prepare(x, y, cols, &train_rows, val.as_deref(), scale_y)?;
    let settings_for = |rows: usize| unit_settings(&a, max_steps, options.elbo_draws, rows);
    let (lr, lr_mode, lr_grid) = if method == Method::Nuts {
        (None, "none", Vec::new())
    } else if let Some(v) = fixed_lr {
        (Some(v), "fixed", Vec::new())
    } else {
        let tprep = match &val {
            Some(_) => prepare(x, y, cols, &train_rows, val.as_deref(), scale_y)?,
            None => {
                let (tr, va) = split(0.1)?;
                prepare(x, y, cols, &tr, Some(&va), scale_y)?
            }
        };
        let job = Job {
            a: &a,
            method,
            interrupt,
            progress_every: Duration::from_secs_f64(a.progress_every),
        };
        let ts = settings_for(tprep.y_train.len());
        let (best, grid) = search_lr(&job, &spec, &tprep, &ts)?;
        (Some(best), "auto", grid)
    };
    let model = Model::build(&spec, prep.x_train.clone(), &prep.y_train)?;
    let settings = settings_for(prep.y_train.len());
    let limits = Limits {
        deadline: None,
        interrupt,
        checkpoint: None,
        resume: None,
    };
    let Trained { fit, stop } = train(
        method,
        lr,
        model.density(),
        &settings,
        a.seed,
        a.lr_schedule,
        limits,
        &mut NoObserver,
    )
    .with_context(|| format!("fitting {method}"))?;
    let validation = match stop {
        Stop::Interrupted => None,
        _ => validate(&spec, &prep, &fit, a.draws, a.seed)?,
    };
    let mut h = header_stub(&spec, &prep);
    h.method = method.name().into();
    h.target.clone_from(&data.target);
    h.features.clone_from(&data.features);
    h.classes.clone_from(&data.classes);
    h.settings = settings_record(&a, t, (lr, lr_mode.into(), lr_grid), &settings);
    h.training = training_record(
        &fit,
        stop,
        fit.seconds,
        prep.y_train.len(),
        val.as_ref().map_or(0, Vec::len),
    );
    h.validation = validation;
    let file = ModelFile::new(h, &fit.posterior, model.density().dim());
    // Serialising checks what saving checks (finite parameters, a consistent header).
    file.to_bytes()?;
    Ok(file)
}

/// The rows of `x` (row-major, `cols` columns) standardised with the model's training
/// statistics.
///
/// # Errors
/// A column count other than the model's, a value that cannot be standardised.
pub fn standardise(h: &Header, x: &[f64], cols: usize) -> Result<Matrix> {
    let want = h.x_scaler.mean.len();
    if cols != want || cols == 0 || !x.len().is_multiple_of(cols) {
        bail!("X has {cols} features, but the model was fitted on {want}");
    }
    let mut z = x.to_vec();
    h.x_scaler.apply(&mut z).map_err(|(r, c)| {
        anyhow!(
            "X[{r}, {c}] = {} is not finite or lies too far outside the training data to \
             standardise",
            x[r * cols + c]
        )
    })?;
    Ok(Matrix::from_vec(x.len() / cols, cols, z)?)
}

/// Regression predictions ([`predict_regression`]) of the rows of `x` (raw features); with the
/// targets `y` (target units, one per row) also the log predictive density of each.
///
/// # Errors
/// A classifier, a bad `x` or `y`, `draws` below 2, an `interval` outside (0, 1).
pub fn predict_regression_arrays(
    m: &ModelFile,
    x: &[f64],
    cols: usize,
    draws: usize,
    interval: f64,
    seed: u64,
    y: Option<&[f64]>,
) -> Result<RegressionOutput> {
    if m.header.task != Task::Regression {
        bail!("the model is a classifier, not a regression model");
    }
    check_draws(draws, interval)?;
    let z = standardise(&m.header, x, cols)?;
    if y.is_some_and(|y| y.len() != z.rows()) {
        bail!(
            "y has {} values for {} rows of X",
            y.map_or(0, <[f64]>::len),
            z.rows()
        );
    }
    predict_regression(&m.header, &m.fitted()?, &z, draws, interval, seed, y)
}

/// Class probabilities ([`predict_classes`]) of the rows of `x` (raw features).
///
/// # Errors
/// A regression model, a bad `x`, `draws` below 2.
pub fn predict_classes_arrays(
    m: &ModelFile,
    x: &[f64],
    cols: usize,
    draws: usize,
    seed: u64,
) -> Result<ClassOutput> {
    if m.header.task != Task::Classification {
        bail!("the model is a regression model, not a classifier");
    }
    check_draws(draws, 0.5)?;
    let z = standardise(&m.header, x, cols)?;
    predict_classes(&m.header, &m.fitted()?, &z, draws, seed)
}

fn check_draws(draws: usize, interval: f64) -> Result<()> {
    if draws < 2 {
        bail!("draws must be at least 2, got {draws}");
    }
    if !(interval > 0.0 && interval < 1.0) {
        bail!("the interval's coverage must be in (0, 1), got {interval}");
    }
    Ok(())
}

/// `n` draws of y from the posterior predictive at each row of `x` (raw features), in target
/// units: row i of the result (rows × n) holds y = y_loc(θ) + σ(θ)·ε for the θ draws of the
/// fit in turn (`n` mixture draws for Normal particles; the particles or NUTS draws otherwise).
///
/// # Errors
/// A classifier, a bad `x`, `n` of zero, predictions that are not finite.
pub fn sample_y_arrays(
    m: &ModelFile,
    x: &[f64],
    cols: usize,
    n: usize,
    seed: u64,
) -> Result<Matrix> {
    use rand::SeedableRng;
    let h = &m.header;
    if h.task != Task::Regression {
        bail!("sample_y needs a regression model");
    }
    if n == 0 {
        bail!("n_samples must be at least 1");
    }
    let z = standardise(h, x, cols)?;
    let noise = h
        .architecture
        .noise
        .context("corrupt model header: a regression model without a noise model")?;
    let mlp = Mlp::new(&h.architecture.sizes, h.architecture.activation)
        .context("corrupt model header: bad architecture")?;
    let net = BnnRegression::new(mlp, Matrix::zeros(1, cols), vec![0.0], noise)?
        .with_prior_scale(h.architecture.prior_scale)?;
    let fitted = m.fitted()?;
    predict::check_memory(h, &fitted, n, z.rows())?;
    let theta = fitted.predictive_draws(n, &mut smi_experiments::uci::prediction_rng(seed))?;
    let pred = net.predict(theta.as_slice(), &z)?;
    let (shift, scale) = h
        .y_scaler
        .as_ref()
        .and_then(|s| Some((*s.mean.first()?, *s.std.first()?)))
        .unwrap_or((0.0, 1.0));
    let k = theta.rows();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5a4d_91e7);
    let mut out = Matrix::zeros(z.rows(), n);
    for i in 0..z.rows() {
        for s in 0..n {
            let t = s % k;
            let e = predict::std_normal(&mut rng);
            let v = (pred.y_loc.get(t, i) + pred.noise_scale[t] * e) * scale + shift;
            if !v.is_finite() {
                bail!("the model's predictions for row {} are not finite", i + 1);
            }
            out.set(i, s, v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data<'a>(x: &'a [f64], y: &'a [f64], classes: Option<Vec<String>>) -> ArrayData<'a> {
        ArrayData {
            x,
            rows: y.len(),
            cols: 2,
            y,
            classes,
            features: vec!["a".into(), "b".into()],
            target: "t".into(),
        }
    }

    fn fast() -> ArrayOptions {
        ArrayOptions {
            hidden: Some(vec![4]),
            elbo_draws: 2,
            max_steps: Some(30),
            ..ArrayOptions::default()
        }
    }

    /// A fit on arrays gives a model file that reads back as it was written and predicts with
    /// the shapes the Python estimators rely on.
    #[test]
    fn regression_round_trip_and_shapes() {
        let x: Vec<f64> = (0..40).map(|i| f64::from(i) * 0.1).collect();
        let y: Vec<f64> = (0..20).map(|i| 3.0 + f64::from(i)).collect();
        let m = fit_arrays(&data(&x, &y, None), &fast(), &Interrupt::never()).unwrap();
        assert_eq!(m.header.features, ["a", "b"]);
        assert_eq!(m.header.architecture.sizes, [2, 4, 1]);
        assert_eq!(m.header.training.steps, 30);
        let back = ModelFile::from_bytes(&m.to_bytes().unwrap(), "test").unwrap();
        assert!(back.header.checksum.is_some());
        let mut h = back.header.clone();
        h.checksum = None;
        assert_eq!((&h, &back.payload), (&m.header, &m.payload));
        let o = predict_regression_arrays(&back, &x[..6], 2, 50, 0.9, 0, Some(&y[..3])).unwrap();
        assert_eq!((o.mean.len(), o.log_pred.len()), (3, 3));
        assert!((0..3).all(|i| o.lower[i] <= o.mean[i] && o.mean[i] <= o.upper[i]));
        let s = sample_y_arrays(&back, &x[..6], 2, 7, 1).unwrap();
        assert_eq!((s.rows(), s.cols()), (3, 7));
        assert!(predict_classes_arrays(&back, &x[..6], 2, 50, 0).is_err());
        assert!(standardise(&back.header, &x[..6], 3).is_err());
    }

    /// The defaults are `smi fit`'s: the network sized to the rows by the rule of
    /// `--hidden auto`, SMI's default temperature; both, and explicit values, are recorded.
    #[test]
    fn defaults_size_the_network_and_record_the_temperature() {
        let x: Vec<f64> = (0..40).map(|i| f64::from(i) * 0.1).collect();
        let y: Vec<f64> = (0..20).map(|i| 3.0 + f64::from(i)).collect();
        let tiny = ArrayOptions {
            elbo_draws: 1,
            max_steps: Some(2),
            ..ArrayOptions::default()
        };
        let m = fit_arrays(&data(&x, &y, None), &tiny, &Interrupt::never()).unwrap();
        let mut sizes = vec![2];
        sizes.extend(sizing::default_hidden(20));
        sizes.push(1);
        assert_eq!(m.header.architecture.sizes, sizes);
        let s = &m.header.settings;
        let t = crate::fitting::DEFAULT_TEMPERATURE_REGRESSION;
        assert_eq!(
            (s.temperature, s.lr_schedule),
            (Some(t), LrScheduleArg::Constant)
        );
        let chosen = ArrayOptions {
            temperature: Some(0.5),
            prior_scale: 0.7,
            lr_schedule: LrScheduleArg::Cosine,
            ..tiny
        };
        let m = fit_arrays(&data(&x, &y, None), &chosen, &Interrupt::never()).unwrap();
        let s = &m.header.settings;
        assert_eq!(
            (s.temperature, s.lr_schedule),
            (Some(0.5), LrScheduleArg::Cosine)
        );
        assert_eq!(m.header.architecture.prior_scale, 0.7);
    }

    #[test]
    fn bad_data_and_labels_are_errors() {
        let x = [0.0, 1.0, 2.0, f64::NAN];
        let e = fit_arrays(&data(&x, &[0.0, 1.0], None), &fast(), &Interrupt::never());
        assert!(e.unwrap_err().to_string().contains("non-finite"));
        let x = [0.0, 1.0, 2.0, 3.0];
        let one = Some(vec!["a".to_string()]);
        assert!(fit_arrays(&data(&x, &[0.0, 0.0], one), &fast(), &Interrupt::never()).is_err());
        let two = Some(vec!["a".to_string(), "b".to_string()]);
        assert!(fit_arrays(&data(&x, &[0.0, 2.0], two), &fast(), &Interrupt::never()).is_err());
    }
}
