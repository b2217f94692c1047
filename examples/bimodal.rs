//! SMI on a bimodal target: a mixture of m = 4 Gaussian guides covers both modes of
//! p(x) ∝ N(x; −2, 0.5²) + N(x; 2, 0.5²), where a single Gaussian (OVI) settles on one of them
//! and SVGD's point masses cover both but say nothing about the spread within a mode.
//!
//! ```text
//! cargo run --release --example bimodal
//! ```
//!
//! The target is a closure wrapped in [`smi::FnDensity`]; every method is fitted through
//! [`smi::fit`] from the same uniform initialisation, once in detail and then over ten seeds to
//! count how often it finds both modes. The example fails if SMI misses a mode.
#![forbid(unsafe_code)]

use anyhow::{ensure, Context, Result};
use smi::rand::{ChaCha8Rng, SeedableRng};
use smi::{fit, Fit, FnDensity, Init, Matrix, Method, NoObserver, OptimizerSettings, RunSettings};

/// The modes' locations and their common scale.
const MODES: [f64; 2] = [-2.0, 2.0];
const MODE_SCALE: f64 = 0.5;
/// Posterior draws used for the fraction in the right mode.
const DRAWS: usize = 4000;
/// Optimisation steps of every fit.
const STEPS: u64 = 5000;
/// Seed of the fits shown in detail.
const SEED: u64 = 1;
/// Number of seeds of the robustness count.
const SEEDS: u64 = 10;

/// log p(x) (up to a constant) of the equal-weight two-component mixture, and its gradient.
fn log_target(x: &[f64], g: &mut [f64]) -> f64 {
    let [a, b] = MODES.map(|m| -0.5 * ((x[0] - m) / MODE_SCALE).powi(2));
    let mx = a.max(b);
    let (wa, wb) = ((a - mx).exp(), (b - mx).exp());
    // d/dx log Σ_c exp(ℓ_c) = Σ_c w_c ℓ_c′ / Σ_c w_c with ℓ_c′ = −(x − m_c)/s².
    g[0] =
        (wa * -(x[0] - MODES[0]) + wb * -(x[0] - MODES[1])) / (MODE_SCALE * MODE_SCALE * (wa + wb));
    mx + (wa + wb).ln()
}

/// Fraction of draws with x > 0.
fn right_fraction(draws: &Matrix) -> f64 {
    let right = draws.as_slice().iter().filter(|&&x| x > 0.0).count();
    right as f64 / draws.rows().max(1) as f64
}

/// Whether a fit put at least 10 % of its draws on each side of 0.
fn covers_both(fraction: f64) -> bool {
    (0.1..=0.9).contains(&fraction)
}

/// Fits `target` by `method` from a uniform start on (−3, 3), with m = 4 particles and S = 20
/// ELBO draws where the method has them.
fn fit_bimodal<F>(target: &FnDensity<F>, method: Method, seed: u64) -> Result<Fit>
where
    F: Fn(&[f64], &mut [f64]) -> f64 + Send + Sync,
{
    // (SVGD's preset starts at the prior median, which a closure density cannot provide.)
    let settings = method
        .preset(STEPS)
        .with_particles(4)
        .with_elbo_draws(20)
        .with_init(Init::Uniform { radius: 3.0 })
        .with_optimizer(OptimizerSettings::adam(0.05))
        .with_seed(seed);
    Ok(fit(
        target,
        &settings,
        &RunSettings::steps(STEPS),
        &mut NoObserver,
    )?)
}

fn main() -> Result<()> {
    let target = FnDensity::new(1, log_target);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    for method in [Method::Smi, Method::Svgd, Method::Ovi] {
        let result = fit_bimodal(&target, method, SEED)?;
        let mixture = result
            .posterior
            .as_mixture()
            .context("a variational fit returns a mixture")?;
        let (locs, scales) = (mixture.locations(), mixture.scales());
        let m = mixture.num_particles();
        println!(
            "{} ({m} component{}, {:.2} s):",
            method.label(),
            if m == 1 { "" } else { "s" },
            result.seconds
        );
        for i in 0..m {
            println!(
                "  particle {i}: location {:>6.3}  scale {:.3}",
                locs.get(i, 0),
                scales.get(i, 0)
            );
        }
        let draws = result.posterior.sample(DRAWS, &mut rng)?;
        let fraction = right_fraction(&draws);
        let sd = draws.col_variances()[0].sqrt();
        println!(
            "  {DRAWS} draws: fraction with x > 0 {fraction:.3} (target 0.5), sd {sd:.3} (target {:.3})",
            (MODES[1].powi(2) + MODE_SCALE.powi(2)).sqrt()
        );
        // How often the method finds both modes over other seeds.
        let mut hits = 0;
        for seed in 0..SEEDS {
            let r = fit_bimodal(&target, method, seed)?;
            if covers_both(right_fraction(&r.posterior.sample(DRAWS, &mut rng)?)) {
                hits += 1;
            }
        }
        println!("  both modes covered in {hits} of {SEEDS} seeds");
        if method == Method::Smi {
            let near = |mode: f64| (0..m).any(|i| (locs.get(i, 0) - mode).abs() < 0.5);
            ensure!(
                MODES.iter().all(|&mode| near(mode)) && covers_both(fraction),
                "SMI missed a mode: particle locations {:?}, {fraction:.3} of the draws have x > 0",
                locs.as_slice()
            );
        }
    }
    println!("\nSMI covers both modes.");
    Ok(())
}
