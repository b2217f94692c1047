//! `smi inspect`: what a saved model is, how it was fitted, and its validation metrics.

use std::fmt::Write;
use std::path::Path;

use anyhow::Result;

use smi::GuideSettings;

use smi_models::Noise;

use super::diagnostics::describe_nuts;
use super::model_file::{ModelFile, PayloadKind};
use super::predict::{describe, noise_scales};

/// Runs `smi inspect`: the whole JSON header of the model at `path` (`json`) or its summary,
/// on stdout.
///
/// # Errors
/// A model file that cannot be read.
pub fn run(path: &Path, json: bool) -> Result<()> {
    let m = ModelFile::load(path)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&m.header)?);
    } else {
        print!("{}", summary(&m, &path.display().to_string()));
    }
    Ok(())
}

/// Draws of the learned noise level that `smi inspect` summarises.
const NOISE_DRAWS: usize = 1000;

/// The observation noise σ of a regression model in target units: a fixed σ, or the learned
/// σ's posterior mean and central 90 % interval over [`NOISE_DRAWS`] draws, with its prior.
fn describe_noise(m: &ModelFile, noise: &Noise) -> String {
    let h = &m.header;
    let scale = h
        .y_scaler
        .as_ref()
        .and_then(|s| s.std.first().copied())
        .unwrap_or(1.0);
    match noise {
        Noise::Fixed(s) => format!("σ = {} (fixed, target units)", s * scale),
        Noise::GammaPrecision { shape, rate } => {
            let prior = format!(
                "learned; prior precision Gamma({shape}, {rate}) on {} targets",
                if h.y_scaler.is_some() {
                    "standardised"
                } else {
                    "raw"
                }
            );
            let sigma = m
                .fitted()
                .and_then(|f| noise_scales(h, &f, NOISE_DRAWS, h.settings.seed));
            match sigma {
                Ok(s) if !s.is_empty() => {
                    let mean = s.iter().sum::<f64>() / s.len() as f64;
                    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
                    format!(
                        "σ mean {mean:.4}, 90 % interval [{:.4}, {:.4}] (target units, {} \
                         draws; {prior})",
                        at(0.05),
                        at(0.95),
                        s.len()
                    )
                }
                Ok(_) => format!("σ not available: no draws ({prior})"),
                Err(e) => format!("σ not available: {e:#} ({prior})"),
            }
        }
    }
}

/// The likelihood temperature T of a fit as `smi inspect` states it (`None`: a file that does
/// not record it, written by an smi that fitted at T = 1).
fn describe_temperature(t: Option<f64>) -> String {
    match t {
        Some(1.0) => "temperature 1 (the Bayesian posterior)".into(),
        Some(t) => format!(
            "temperature {t} (tempered: p(y | θ)^(1/T), not the Bayesian posterior; \
             docs/calibration.md)"
        ),
        None => "temperature 1 (not recorded in this file: it was written by an smi that \
                 fitted every model at T = 1)"
            .into(),
    }
}

/// The summary `smi inspect` prints for model `m` read from `name`.
pub fn summary(m: &ModelFile, name: &str) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    macro_rules! line {
        ($($t:tt)*) => {{
            let _ = writeln!(out, $($t)*);
        }};
    }
    let h = &m.header;
    let arch = &h.architecture;
    let sizes: Vec<String> = arch.sizes.iter().map(usize::to_string).collect();
    line!(
        "model        {} (format {}, written by smi {})",
        name,
        h.format_version,
        h.smi_version
    );
    line!("task         {} of {:?}", h.task.name(), h.target);
    line!(
        "network      {} {:?}, N(0, {}²) priors",
        sizes.join(" → "),
        arch.activation,
        arch.prior_scale
    );
    if let Some(noise) = &arch.noise {
        line!("noise        {}", describe_noise(m, noise));
    }
    line!("features     {}", h.features.join(", "));
    if let Some(c) = &h.classes {
        line!("classes      {}", c.join(", "));
    }
    if let Some(s) = &h.y_scaler {
        if let (Some(mean), Some(std)) = (s.mean.first(), s.std.first()) {
            line!("target scale mean {mean:.6}, std {std:.6}");
        }
    }
    let s = &h.settings;
    line!(
        "method       {} — {}",
        h.method,
        match h.payload.kind {
            PayloadKind::Particles => format!(
                "{} particle(s) of a {} guide, d = {}",
                h.payload.rows,
                match h.payload.guide {
                    Some(GuideSettings::Normal { .. }) => "mean-field Normal".to_string(),
                    Some(g @ GuideSettings::LowRank { .. }) => format!("{} Normal", g.name()),
                    Some(GuideSettings::FullRank { .. }) => "full-rank Normal".to_string(),
                    Some(GuideSettings::Delta) => "point-mass (Delta)".to_string(),
                    None => "?".to_string(),
                },
                h.payload.dim
            ),
            PayloadKind::Draws => format!("{} NUTS draws, d = {}", h.payload.rows, h.payload.dim),
        }
    );
    let lr = s.lr.map_or_else(|| "-".to_string(), |v| format!("{v:e}"));
    if h.method == "nuts" {
        line!(
            "fitted with  NUTS, {} warm-up + {} draws on the full data, seed {}",
            s.nuts_warmup,
            s.nuts_draws,
            s.seed
        );
    } else {
        line!(
            "fitted with  lr {lr} ({}, {} schedule), ≤ {} steps, S = {}, batch {}, early \
             stopping {}, seed {}",
            s.lr_mode,
            s.lr_schedule.name(),
            s.max_steps,
            s.elbo_draws,
            s.batch_size
                .map_or_else(|| "full".to_string(), |b| b.to_string()),
            if s.early_stopping { "on" } else { "off" },
            s.seed
        );
    }
    line!("likelihood   {}", describe_temperature(s.temperature));
    for (lr, v) in &s.lr_grid {
        line!(
            "  lr grid    {lr:e}: validation score {}",
            v.map_or_else(|| "diverged".to_string(), |v| format!("{v:.4}"))
        );
    }
    let t = &h.training;
    line!(
        "training     {} rows ({} held out), {} steps in {:.1} s{}",
        t.rows,
        t.validation_rows,
        t.steps,
        t.seconds,
        if t.early_stopped {
            ", stopped early"
        } else {
            ""
        }
    );
    if let Some(stopped) = &t.stopped {
        line!(
            "stopped      {stopped} before the step budget (a checkpoint <model>.ckpt, if \
             kept, continues it with smi fit --resume)"
        );
    }
    if let Some(n) = &t.nuts {
        line!("NUTS         {}", describe_nuts(n));
    }
    match &h.validation {
        Some(v) => line!("validation   {}", describe(v)),
        None => line!("validation   none (fit with --validation 0.1 to get metrics)"),
    }
    out
}
