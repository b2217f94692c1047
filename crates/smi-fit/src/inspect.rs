//! `smi inspect`: what a saved model is, how it was fitted, and its validation metrics.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Result;

use smi::GuideSettings;

use super::model_file::{ModelFile, PayloadKind};
use super::predict::describe;

/// Options of `smi inspect`.
#[derive(clap::Args, Debug, Clone)]
pub struct InspectArgs {
    /// A model written by `smi fit --save`.
    #[arg(long)]
    pub model: PathBuf,
    /// Print the whole JSON header instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `smi inspect`.
pub fn run(a: &InspectArgs) -> Result<()> {
    let m = ModelFile::load(&a.model)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&m.header)?);
    } else {
        print!("{}", summary(&m, &a.model.display().to_string()));
    }
    Ok(())
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
        line!("noise        {noise:?} (standardised target units)");
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
                    Some(GuideSettings::Normal { .. }) => "mean-field Normal",
                    Some(GuideSettings::Delta) => "point-mass (Delta)",
                    None => "?",
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
            "fitted with  lr {lr} ({}), ≤ {} steps, S = {}, batch {}, early stopping {}, seed {}",
            s.lr_mode,
            s.max_steps,
            s.elbo_draws,
            s.batch_size
                .map_or_else(|| "full".to_string(), |b| b.to_string()),
            if s.early_stopping { "on" } else { "off" },
            s.seed
        );
    }
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
    match &h.validation {
        Some(v) => line!("validation   {}", describe(v)),
        None => line!("validation   none (fit with --validation 0.1 to get metrics)"),
    }
    out
}
