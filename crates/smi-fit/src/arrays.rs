//! Prediction on in-memory arrays: the functions behind the scikit-learn estimators of the
//! Python package (`smi.BNNRegressor`, `smi.BNNClassifier`). A fit on arrays is [`crate::fit`]
//! of a [`crate::Source::Arrays`]; its model file is the one `smi fit --save` would write, so a
//! model fitted from Python is read by `smi predict` and the other way round.

use super::predict::{predict_classes, predict_regression, ClassOutput, RegressionOutput};
use super::*;

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
    let theta = fitted.predictive_draws(n, &mut crate::protocol::prediction_rng(seed))?;
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

    fn fast() -> FitOptions {
        FitOptions {
            hidden: Some(vec![4]),
            elbo_draws: Some(2),
            max_steps: Some(30),
            ..FitOptions::default()
        }
    }

    fn fit_arrays(d: &ArrayData<'_>, o: &FitOptions) -> Result<ModelFile> {
        let never = crate::interrupt::Interrupt::never();
        crate::fit(&Source::Arrays(d.clone()), o, &RunControl::quiet(&never)).map(|f| f.file)
    }

    /// A fit on arrays gives a model file that reads back as it was written and predicts with
    /// the shapes the Python estimators rely on.
    #[test]
    fn regression_round_trip_and_shapes() {
        let x: Vec<f64> = (0..40).map(|i| f64::from(i) * 0.1).collect();
        let y: Vec<f64> = (0..20).map(|i| 3.0 + f64::from(i)).collect();
        let m = fit_arrays(&data(&x, &y, None), &fast()).unwrap();
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
        let tiny = FitOptions {
            elbo_draws: Some(1),
            max_steps: Some(2),
            ..FitOptions::default()
        };
        let m = fit_arrays(&data(&x, &y, None), &tiny).unwrap();
        let mut sizes = vec![2];
        sizes.extend(sizing::default_hidden(20));
        sizes.push(1);
        assert_eq!(m.header.architecture.sizes, sizes);
        let s = &m.header.settings;
        let t = DEFAULT_TEMPERATURE_REGRESSION;
        assert_eq!(
            (s.temperature, s.lr_schedule),
            (Some(t), LrScheduleKind::Constant)
        );
        let chosen = FitOptions {
            temperature: Some(0.5),
            prior_scale: 0.7,
            lr_schedule: LrScheduleKind::Cosine,
            ..tiny
        };
        let m = fit_arrays(&data(&x, &y, None), &chosen).unwrap();
        let s = &m.header.settings;
        assert_eq!(
            (s.temperature, s.lr_schedule),
            (Some(0.5), LrScheduleKind::Cosine)
        );
        assert_eq!(m.header.architecture.prior_scale, 0.7);
    }

    #[test]
    fn bad_data_and_labels_are_errors() {
        let x = [0.0, 1.0, 2.0, f64::NAN];
        let e = fit_arrays(&data(&x, &[0.0, 1.0], None), &fast());
        assert!(e.unwrap_err().to_string().contains("non-finite"));
        let x = [0.0, 1.0, 2.0, 3.0];
        let one = Some(vec!["a".to_string()]);
        assert!(fit_arrays(&data(&x, &[0.0, 0.0], one), &fast()).is_err());
        let two = Some(vec!["a".to_string(), "b".to_string()]);
        assert!(fit_arrays(&data(&x, &[0.0, 2.0], two), &fast()).is_err());
    }
}
