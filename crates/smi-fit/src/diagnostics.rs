//! NUTS's convergence diagnostics as `smi fit` prints them and the model file keeps them:
//! divergences, the largest split-R̂ and the smallest bulk ESS over the parameters.

use smi::NutsResult;

use super::model_file::NutsDiagnostics;

/// The diagnostics of `r`: R̂ and ESS per parameter from the rank-normalised split chains (each
/// chain split in halves, so that a single chain still gets an R̂ from its two halves), then
/// their worst values over the parameters.
pub fn nuts_diagnostics(r: &NutsResult) -> NutsDiagnostics {
    let d = r.draws.cols();
    let mut rhat = Vec::with_capacity(d);
    let mut ess = Vec::with_capacity(d);
    for j in 0..d {
        let chains = r.coordinate_chains(j);
        let refs: Vec<&[f64]> = chains.iter().map(Vec::as_slice).collect();
        rhat.push(smi::split_rhat(&refs));
        ess.push(smi::ess_bulk(&refs));
    }
    let finite = |v: &[f64]| {
        let mut f: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        f.sort_by(f64::total_cmp);
        f
    };
    let (rhat, ess) = (finite(&rhat), finite(&ess));
    NutsDiagnostics {
        chains: r.num_chains,
        draws: r.num_draws,
        divergences: r.divergences,
        warmup_divergences: r.chains.iter().map(|c| c.warmup_divergences).sum(),
        mean_tree_depth: if r.mean_tree_depth.is_finite() {
            r.mean_tree_depth
        } else {
            0.0
        },
        max_rhat: rhat.last().copied(),
        min_ess_bulk: ess.first().copied(),
        median_ess_bulk: ess.get(ess.len() / 2).copied(),
    }
}

/// One line: divergences, R̂, ESS and tree depth, with a warning where they call for one
/// (any divergence, R̂ above 1.01, an ESS under 100 per chain; Vehtari et al. 2021).
pub fn describe_nuts(n: &NutsDiagnostics) -> String {
    let kept = n.chains * n.draws;
    let f = |v: Option<f64>, digits: usize| {
        v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.digits$}"))
    };
    let mut s = format!(
        "{} divergent transition(s) in {kept} kept draws ({} in warm-up); R̂ max {} \
         (split halves of {} chain(s)); bulk ESS min {}, median {}; mean tree depth {:.1}",
        n.divergences,
        n.warmup_divergences,
        f(n.max_rhat, 3),
        n.chains,
        f(n.min_ess_bulk, 0),
        f(n.median_ess_bulk, 0),
        n.mean_tree_depth
    );
    let mut warn = Vec::new();
    if n.divergences > 0 {
        warn.push("divergences: the draws may be biased (more --nuts-warmup may help)");
    }
    if n.max_rhat.is_some_and(|r| r > 1.01) {
        warn.push("R̂ above 1.01: the chain has not mixed (more --nuts-warmup/--nuts-draws)");
    }
    if n.min_ess_bulk.is_some_and(|e| e < 100.0 * n.chains as f64) {
        warn.push("a bulk ESS under 100 per chain: few effective draws (more --nuts-draws)");
    }
    for w in warn {
        s.push_str("\n  warning: ");
        s.push_str(w);
    }
    s
}
