//! The memory a fit needs, checked against the machine before anything is allocated.

use super::*;

/// Refuses a fit whose biggest buffers cannot fit in this machine's memory (see [`limits`]),
/// before anything is allocated. `sizes` are the network's widths, `train`/`val` the rows
/// fitted and validated.
pub(super) fn check_fit_memory(
    a: &FitOptions,
    sizes: &[usize],
    elbo_draws: usize,
    train: usize,
    val: usize,
    validates: bool,
) -> Result<()> {
    let method = a.method;
    let hidden = format!(
        "--hidden {}",
        sizes
            .get(1..sizes.len().saturating_sub(1))
            .unwrap_or_default()
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    let net = network_dim(sizes).ok_or_else(|| {
        anyhow!("{hidden}: the network is too large (its parameter count overflows)")
    })?;
    let d = net
        .checked_add(1)
        .ok_or_else(|| anyhow!("{hidden}: the network is too large"))?;
    let normal = matches!(method, Method::Smi | Method::Ovi);
    let guide = a.guide.unwrap_or_else(smi::GuideSettings::normal);
    let p = if normal { guide.param_dim(d) } else { d };
    let mut b = Budget::new();
    let widths: usize = sizes.iter().fold(0usize, |s, &w| s.saturating_add(w));
    match method {
        Method::Nuts => b.add(
            "the NUTS draws",
            &format!("--nuts-draws {}, {hidden}", a.nuts_draws),
            &[
                (a.nuts_draws.max(1), "draws"),
                (d, "parameters"),
                (8, "bytes"),
            ],
        ),
        _ => {
            let (m, flags) = match method {
                Method::Smi | Method::Svgd | Method::Asvgd => (
                    a.particles,
                    format!("--particles {}, {hidden}", a.particles),
                ),
                _ => (1, hidden.clone()),
            };
            b.add(
                "the particles and their optimiser state",
                &flags,
                &[(m, "particles"), (p, "values"), (4, "copies"), (8, "bytes")],
            );
            if matches!(method, Method::Smi | Method::Svgd | Method::Asvgd) {
                // k(x_i, x_j), its gradient weights, the attraction's packed copy and one
                // more: every Stein step holds these m × m matrices
                b.add(
                    "the kernel's m × m matrices",
                    &format!("--particles {}", a.particles),
                    &[
                        (a.particles, "particles"),
                        (a.particles, "particles"),
                        (4, "copies"),
                        (8, "bytes"),
                    ],
                );
            }
            if method == Method::Smi {
                b.add(
                    "the model draws of one step and their gradients",
                    &format!(
                        "--particles {}, --elbo-draws {elbo_draws}, {hidden}",
                        a.particles
                    ),
                    &[
                        (a.particles, "particles"),
                        (elbo_draws, "draws"),
                        (d, "parameters"),
                        (2, "copies"),
                        (8, "bytes"),
                    ],
                );
            }
        }
    }
    let rows = train.min(a.batch_size).max(1);
    b.add(
        "one forward and backward pass",
        &format!("--batch-size {}, {hidden}", a.batch_size),
        &[
            (rows, "rows"),
            (widths, "activations"),
            (2, "copies"),
            (4, "bytes"),
        ],
    );
    if validates {
        // θ draws of a prediction: mixture draws of a Normal guide, the particles of point
        // masses, the stored NUTS draws.
        let (k, flag) = match method {
            Method::Smi | Method::Ovi => (a.draws, format!("--draws {}", a.draws)),
            Method::Svgd | Method::Asvgd => (a.particles, format!("--particles {}", a.particles)),
            Method::Map => (1, String::new()),
            Method::Nuts => (a.nuts_draws, format!("--nuts-draws {}", a.nuts_draws)),
        };
        let flags = if flag.is_empty() {
            hidden.clone()
        } else {
            format!("{flag}, {hidden}")
        };
        let out = *sizes.last().unwrap_or(&1);
        b.add(
            "the validation predictions",
            &flags,
            &[
                (k.max(1), "draws"),
                (
                    d.saturating_add(val.clamp(1, predict::CHUNK).saturating_mul(out)),
                    "values",
                ),
                (8, "bytes"),
            ],
        );
        b.add(
            "the draws of the predictive interval",
            &format!("--draws {}", a.draws),
            &[(a.draws.max(k), "draws"), (8, "bytes")],
        );
    }
    b.check()
}
