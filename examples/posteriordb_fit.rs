//! A posteriordb posterior fitted by one method with the library's defaults, printed beside
//! posteriordb's reference draws; or (`--table`) the measurement that chose the variational
//! defaults.
//!
//! ```text
//! cargo run --release --example posteriordb -- kidiq ovi       # one posterior, one method
//! cargo run --release --example posteriordb -- all nuts        # every posterior
//! cargo run --release --example posteriordb -- --table         # docs/defaults.md's table
//! cargo run --release --example posteriordb -- --seeds         # the defaults, seeds 1–4
//! cargo run --release --example posteriordb -- --mean-field    # exact mean-field optima
//! ```
//!
//! Posteriors: `eight_schools`, `kidiq`, `sblrc`, `arK` (or `all`); methods: `nuts`, `ovi`,
//! `smi`, `svgd` (m = 20), `map`, `asvgd`. The data are read from `$SMI_DATA_DIR/posteriordb`
//! (default `../shared/data/posteriordb`).
#![forbid(unsafe_code)]

use std::time::Instant;

use anyhow::{bail, Context, Result};
use smi::{fit, Fit, Method, MethodSettings, NoObserver, PerDraw, RunSettings};
use smi_examples::posteriordb::{
    self, load, max_of, mean_field_errors, standardised_errors, ArK, EightSchools, Kidiq, Loaded,
    Sblrc, StanPosterior,
};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag] if flag == "--table" => table::run(),
        [flag] if flag == "--seeds" => table::seeds(),
        [flag] if flag == "--mean-field" => {
            mean_field::<EightSchools>()?;
            mean_field::<Kidiq>()?;
            mean_field::<Sblrc>()?;
            mean_field::<ArK>()
        }
        [name, method] => {
            let method: Method = method.parse()?;
            for_each_posterior(name, |short| fit_one(short, method))
        }
        _ => bail!(
            "usage: posteriordb <eight_schools|kidiq|sblrc|arK|all> <nuts|ovi|smi|svgd|map|asvgd> \
             | posteriordb --table | posteriordb --seeds | posteriordb --mean-field"
        ),
    }
}

/// Calls `f` with the short name of every posterior `name` selects (`all`: the four).
fn for_each_posterior(name: &str, mut f: impl FnMut(&str) -> Result<()>) -> Result<()> {
    let shorts = [EightSchools::SHORT, Kidiq::SHORT, Sblrc::SHORT, ArK::SHORT];
    let chosen: Vec<&str> = shorts
        .into_iter()
        .filter(|s| name == "all" || s.eq_ignore_ascii_case(name))
        .collect();
    if chosen.is_empty() {
        bail!(
            "unknown posterior {name:?}; valid: {}, all",
            shorts.join(", ")
        );
    }
    chosen.into_iter().try_for_each(&mut f)
}

/// Fits the posterior with short name `short` by `method` with the defaults and prints it.
fn fit_one(short: &str, method: Method) -> Result<()> {
    match short {
        s if s == EightSchools::SHORT => report::<EightSchools>(method),
        s if s == Kidiq::SHORT => report::<Kidiq>(method),
        s if s == Sblrc::SHORT => report::<Sblrc>(method),
        _ => report::<ArK>(method),
    }
}

/// The library's defaults for `method`: its preset ([`Method::preset`], SVGD with m = 20) and
/// the default run settings.
fn defaults(method: Method) -> (MethodSettings, RunSettings) {
    posteriordb::library_defaults(method)
}

/// Fits `M` by `method` with the defaults and prints the constrained means and sds beside the
/// reference's.
fn report<M: StanPosterior>(method: Method) -> Result<()> {
    let Loaded { model, reference } =
        load::<M>().with_context(|| format!("loading {}", M::NAME))?;
    let (settings, run) = defaults(method);
    let t = Instant::now();
    let result = fit(&model, &settings, &run, &mut NoObserver)?;
    let seconds = t.elapsed().as_secs_f64();
    println!(
        "{} by {} (defaults): {}",
        M::NAME,
        method.label(),
        ended(&result)
    );
    println!("The fit's summary (constrained space, by Stan name):");
    println!("{}", result.summary(smi::Summary::DEFAULT_DRAWS, 0)?);
    println!("Against posteriordb's reference (10 000 draws):");
    let draws = posteriordb::posterior_draws(&result.posterior)?;
    let (means, sds) = posteriordb::constrained_moments(&model, &draws);
    let errors = standardised_errors(&model, &reference, &result.posterior)?;
    println!(
        "{:<12} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "parameter", "mean", "ref mean", "sd", "ref sd", "|err|/sd"
    );
    for (i, name) in reference.names().iter().enumerate() {
        println!(
            "{name:<12} {:>12.5} {:>12.5} {:>12.5} {:>12.5} {:>8.3}",
            means[i],
            reference.means()[i],
            sds[i],
            reference.sds()[i],
            errors[i]
        );
    }
    println!("max standardised mean error {:.3}", max_of(&errors));
    if result.nuts.is_some() {
        if let Some(rhat) = result.summary(0, 0)?.max_rhat() {
            println!("max R̂ {rhat:.4}");
        }
    }
    if method == Method::Ovi {
        let moments = reference.unconstrained(&model)?;
        let mf = mean_field_errors(&moments, &result.posterior)?;
        println!(
            "unconstrained space: max |mean − ref mean|/ref sd {:.3}, max |sd/exact mean-field sd − 1| {:.3}",
            mf.max_mean(),
            mf.max_sd()
        );
    }
    println!(
        "{} steps, {seconds:.2} s (d = {})\n",
        result.steps,
        PerDraw::dim(&model)
    );
    Ok(())
}

/// Prints the exact mean-field optimum of `M` (sample-average ELBO, 20 000 draws) beside the
/// covariance formula 1/√(Σ⁻¹)_ii of the reference draws, per unconstrained coordinate.
fn mean_field<M: StanPosterior>() -> Result<()> {
    let l = load::<M>()?;
    let m = l.reference.unconstrained(&l.model)?;
    let t = Instant::now();
    let o = posteriordb::mean_field_optimum(&l.model, &m.mean, &m.mean_field_sd, 20_000, 1)?;
    println!(
        "{}: {} Newton iterations, {:.2} s",
        M::NAME,
        o.iterations,
        t.elapsed().as_secs_f64()
    );
    println!(
        "{:<14} {:>10} {:>10} {:>10} {:>10} {:>8}",
        "coordinate", "opt mean", "ref mean", "opt sd", "cov sd", "sd/cov−1"
    );
    let layout = PerDraw::layout(&l.model);
    for block in layout.blocks() {
        for (i, c) in block.range().enumerate() {
            let name = if block.len() == 1 {
                block.name.clone()
            } else {
                format!("{}[{}]", block.name, i + 1)
            };
            println!(
                "{name:<14} {:>10.5} {:>10.5} {:>10.5} {:>10.5} {:>+8.3}",
                o.mean[c],
                m.mean[c],
                o.sd[c],
                m.mean_field_sd[c],
                o.sd[c] / m.mean_field_sd[c] - 1.0
            );
        }
    }
    println!();
    Ok(())
}

/// How a fit ended, for the report.
fn ended(f: &Fit) -> String {
    format!("{:?} after {} steps", f.termination, f.steps)
}

mod table {
    //! `--table`: each candidate setting on each posterior, fitted through [`smi::fit`] until
    //! the convergence rule or the cap, then judged against the reference. This is the
    //! measurement of docs/defaults.md.
    use super::*;
    use smi::{ConvergenceSettings, LrSchedule, OptimizerSettings, PlateauSettings};

    /// One candidate: a label, the method's settings and the run settings.
    struct Candidate {
        label: String,
        settings: MethodSettings,
        run: RunSettings,
    }

    /// Fits `c` on `M` and prints one table row: steps, termination, error(s), seconds.
    fn row<M: StanPosterior>(c: &Candidate) -> Result<()> {
        let l = load::<M>()?;
        let f = fit(&l.model, &c.settings, &c.run, &mut NoObserver)?;
        let err = if c.settings.method() == Method::Ovi {
            let e = mean_field_errors(&posteriordb::mean_field_target(&l)?, &f.posterior)?;
            format!("{:.3} | {:.3}", e.max_mean(), e.max_sd())
        } else {
            let e = standardised_errors(&l.model, &l.reference, &f.posterior)?;
            format!("{:.3} | ", max_of(&e))
        };
        println!(
            "| {} | {} | {} | {:?} | {err} | {:.2} |",
            c.label,
            M::SHORT,
            f.steps,
            f.termination,
            f.seconds
        );
        Ok(())
    }

    /// The convergence rule the defaults were chosen with (now `ConvergenceSettings::default()`,
    /// spelt out so the table does not move with it): 10 windows of 500 steps without a
    /// significant ELBO gain.
    fn patient() -> ConvergenceSettings {
        ConvergenceSettings {
            window: 500,
            patience: 10,
            ..ConvergenceSettings::default()
        }
    }

    /// Adam(lr) under reduce-on-plateau after `patience` windows of `window` steps, floor
    /// 1e-6.
    fn plateau(lr: f64, window: u64, patience: u64) -> OptimizerSettings {
        let p = PlateauSettings {
            window,
            patience,
            ..PlateauSettings::default()
        };
        OptimizerSettings::adam(lr).with_schedule(LrSchedule::plateau(p, 1e-6))
    }

    /// The candidates, the old defaults first and the chosen ones last.
    fn candidates() -> Vec<Candidate> {
        let cap = 100_000;
        let until = RunSettings::steps(cap).with_convergence(patient());
        let ovi = Method::Ovi.preset(cap);
        vec![
            Candidate {
                label: "OVI old default: Adam(1e-3), S = 1, 10k steps".into(),
                settings: ovi
                    .clone()
                    .with_optimizer(OptimizerSettings::adam(1e-3))
                    .with_elbo_draws(1),
                run: RunSettings::steps(10_000),
            },
            Candidate {
                label: "OVI Adam(0.1) constant, S = 10".into(),
                settings: ovi.clone().with_optimizer(OptimizerSettings::adam(0.1)),
                run: until.clone(),
            },
            Candidate {
                label: "OVI Adam(0.1) plateau(100, 3), S = 10".into(),
                settings: ovi.clone().with_optimizer(plateau(0.1, 100, 3)),
                run: until.clone(),
            },
            Candidate {
                label: "OVI Adam(0.1) plateau(200, 5), S = 1".into(),
                settings: ovi
                    .clone()
                    .with_optimizer(plateau(0.1, 200, 5))
                    .with_elbo_draws(1),
                run: until.clone(),
            },
            Candidate {
                label: "OVI preset, rule (100, 5)".into(),
                settings: ovi.clone(),
                run: RunSettings::steps(cap).with_convergence(ConvergenceSettings {
                    window: 100,
                    patience: 5,
                    ..patient()
                }),
            },
            Candidate {
                label: "**OVI preset** (Adam(0.1) plateau(200, 5), S = 10), rule (500, 10)".into(),
                settings: ovi,
                run: until.clone(),
            },
            Candidate {
                label: "SMI old default: Adagrad(0.05), m = 5, 20k steps".into(),
                settings: Method::Smi
                    .preset(cap)
                    .with_optimizer(OptimizerSettings::adagrad(0.05)),
                run: RunSettings::steps(20_000),
            },
            Candidate {
                label: "**SMI preset** (Adam(0.1) plateau(200, 5)), m = 5, rule (500, 10)".into(),
                settings: Method::Smi.preset(cap),
                run: until.clone(),
            },
            Candidate {
                label: "SVGD preset, m = 20, rule (500, 10) (not gated)".into(),
                settings: Method::Svgd.preset(cap).with_particles(20),
                run: until,
            },
        ]
    }

    /// Prints the rows of the chosen OVI and SMI presets with seeds 1–4.
    pub fn seeds() -> Result<()> {
        let cap = 100_000;
        println!("| settings | posterior | steps | ended | error | OVI sd error | seconds |");
        println!("|---|---|---:|---|---:|---:|---:|");
        for seed in 1..=4 {
            for (label, method) in [("OVI preset", Method::Ovi), ("SMI preset", Method::Smi)] {
                let c = Candidate {
                    label: format!("{label}, seed {seed}"),
                    settings: method.preset(cap).with_seed(seed),
                    run: RunSettings::steps(cap).with_convergence(patient()),
                };
                row::<EightSchools>(&c)?;
                row::<Kidiq>(&c)?;
                row::<Sblrc>(&c)?;
                row::<ArK>(&c)?;
            }
        }
        Ok(())
    }

    /// Prints the table.
    pub fn run() -> Result<()> {
        println!("| settings | posterior | steps | ended | error | OVI sd error | seconds |");
        println!("|---|---|---:|---|---:|---:|---:|");
        for c in candidates() {
            row::<EightSchools>(&c)?;
            row::<Kidiq>(&c)?;
            row::<Sblrc>(&c)?;
            row::<ArK>(&c)?;
        }
        Ok(())
    }
}
