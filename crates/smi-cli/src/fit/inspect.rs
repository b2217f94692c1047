//! `smi inspect`: what a saved model is, how it was fitted, and its validation metrics.

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
    let h = &m.header;
    if a.json {
        println!("{}", serde_json::to_string_pretty(h)?);
        return Ok(());
    }
    let arch = &h.architecture;
    let sizes: Vec<String> = arch.sizes.iter().map(usize::to_string).collect();
    println!(
        "model        {} (format {}, written by smi {})",
        a.model.display(),
        h.format_version,
        h.smi_version
    );
    println!("task         {} of {:?}", h.task.name(), h.target);
    println!(
        "network      {} {:?}, N(0, {}²) priors",
        sizes.join(" → "),
        arch.activation,
        arch.prior_scale
    );
    if let Some(noise) = &arch.noise {
        println!("noise        {noise:?} (standardised target units)");
    }
    println!("features     {}", h.features.join(", "));
    if let Some(c) = &h.classes {
        println!("classes      {}", c.join(", "));
    }
    if let Some(s) = &h.y_scaler {
        println!("target scale mean {:.6}, std {:.6}", s.mean[0], s.std[0]);
    }
    let s = &h.settings;
    println!(
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
        println!(
            "fitted with  NUTS, {} warm-up + {} draws on the full data, seed {}",
            s.nuts_warmup, s.nuts_draws, s.seed
        );
    } else {
        println!(
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
        println!(
            "  lr grid    {lr:e}: validation score {}",
            v.map_or_else(|| "diverged".to_string(), |v| format!("{v:.4}"))
        );
    }
    let t = &h.training;
    println!(
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
        Some(v) => println!("validation   {}", describe(v)),
        None => println!("validation   none (fit with --validation 0.1 to get metrics)"),
    }
    Ok(())
}
