//! Planning a fit from its data and options, before anything is trained: the validation
//! split, the network, the likelihood temperature, the ELBO draws, the step budget and the
//! memory check.

use std::collections::BTreeMap;

use super::*;
use crate::checkpoint::Meta;
use crate::options::FitOptions;
use smi_data::train_test_split_indices;

/// What a fit will do, decided from its data and options.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The rows trained on.
    pub train_rows: Vec<usize>,
    /// The rows held out for validation (`None`: no validation split).
    pub validation_rows: Option<Vec<usize>>,
    /// T, the likelihood temperature.
    pub temperature: f64,
    /// S, ELBO draws per particle.
    pub elbo_draws: usize,
    /// The step budget.
    pub max_steps: u64,
    /// Whether regression targets are standardised.
    pub scale_y: bool,
    /// The options that define the model, as resolved (a resumed fit must have the same),
    /// keyed by their `smi fit` flag.
    pub model_options: BTreeMap<String, String>,
    /// The network and likelihood.
    pub(crate) spec: Spec,
}

/// The rows of `n` kept for training and held out (`frac` of them) by sklearn's split with
/// random_state 10.
pub(crate) fn split(n: usize, frac: f64) -> Result<(Vec<usize>, Vec<usize>)> {
    train_test_split_indices(n, frac, 10).with_context(|| {
        format!(
            "--validation {frac}: cannot hold out {frac} of {n} rows for validation and keep \
             training rows (too few rows?)"
        )
    })
}

/// Plans a fit of `o` on `data`; `resumed` is the checkpoint a resumed fit continues (its
/// ELBO draws are kept). With `messages`, says what was sized automatically.
///
/// # Errors
/// A split that leaves no rows, a network too large to count, a fit that cannot fit in this
/// machine's memory.
pub(crate) fn plan(
    data: &Data,
    o: &FitOptions,
    resumed: Option<&Meta>,
    messages: bool,
) -> Result<Plan> {
    let (task, n) = (data.task, data.rows());
    let (train_rows, validation_rows) = match o.validation {
        Some(v) => split(n, v).map(|(tr, va)| (tr, Some(va)))?,
        None => ((0..n).collect(), None),
    };
    let hidden = match &o.hidden {
        Some(h) => h.clone(),
        None => {
            let h = sizing::default_hidden(train_rows.len());
            if messages {
                let widths: Vec<String> = h.iter().map(usize::to_string).collect();
                eprintln!(
                    "network: hidden layers {} for {} training rows (--hidden auto; --hidden \
                     sets them)",
                    widths.join(","),
                    train_rows.len()
                );
            }
            h
        }
    };
    let activation = o.activation_for(task);
    let temperature = o.temperature_for(task);
    let mut sizes = vec![data.features.len()];
    sizes.extend(&hidden);
    sizes.push(data.classes.as_ref().map_or(1, Vec::len));
    let spec = Spec {
        task,
        sizes,
        activation,
        prior_scale: o.prior_scale,
        likelihood_weight: 1.0 / temperature,
    };
    let joined = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let model_options: BTreeMap<String, String> = [
        ("--target", data.target.clone()),
        ("--features", data.features.join(",")),
        (
            "--activation",
            match activation {
                Activation::Relu => "relu",
                Activation::Tanh => "tanh",
            }
            .to_string(),
        ),
        ("--hidden", joined(&hidden)),
        ("--prior-scale", o.prior_scale.to_string()),
        ("--target-scaling", o.target_scaling.name().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let elbo_draws = match resumed {
        Some(m) => m.elbo_draws,
        None => o.elbo_draws.unwrap_or(DEFAULT_ELBO_DRAWS),
    };
    if elbo_draws == 0 {
        bail!("--elbo-draws must be at least 1");
    }
    let max_steps = match o.max_steps {
        Some(s) => s,
        None => {
            let draws = sizing::draws_per_step(o.method, o.particles, elbo_draws);
            let rows = train_rows.len().min(o.batch_size);
            let dim = network_dim(&spec.sizes)
                .unwrap_or(usize::MAX)
                .saturating_add(usize::from(task == Task::Regression));
            let s = sizing::default_max_steps(draws, rows, dim);
            if messages && o.method != Method::Nuts {
                eprintln!(
                    "step budget {s} (sized for about {:.0} s: {draws} draws × {rows} rows × \
                     {dim} parameters a step; --max-steps sets it)",
                    sizing::TARGET_SECONDS
                );
            }
            s
        }
    };
    let search = o.lr.is_none() && o.method != Method::Nuts && resumed.is_none();
    check_fit_memory(
        o,
        &spec.sizes,
        elbo_draws,
        train_rows.len(),
        validation_rows.as_ref().map_or(n / 10, Vec::len),
        validation_rows.is_some() || search,
    )?;
    Ok(Plan {
        train_rows,
        validation_rows,
        temperature,
        elbo_draws,
        max_steps,
        scale_y: task == Task::Regression && o.target_scaling == TargetScaling::Standardize,
        model_options,
        spec,
    })
}

impl Plan {
    /// The engine settings of a fit of `o` under this plan on `rows` training rows
    /// (mini-batches only when `rows` exceeds the batch).
    pub fn protocol(&self, o: &FitOptions, rows: usize) -> Protocol {
        Protocol {
            max_steps: self.max_steps,
            num_particles: o.particles,
            elbo_draws: self.elbo_draws,
            batch_size: (rows > o.batch_size).then_some(o.batch_size),
            init_radius: 0.1,
            early_stopping: o.early_stopping,
            nuts: NutsSettings {
                num_warmup: o.nuts_warmup,
                num_draws: o.nuts_draws,
                ..NutsSettings::uci()
            },
            attraction: Default::default(),
            defect: None,
            guide: o.guide,
            loss_temperature: 1.0,
            kernel: None,
            scale_lr_factor: 1.0,
        }
    }
}
