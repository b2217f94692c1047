//! Tests of the sampler: moments on known targets, divergences, errors, settings.

use super::*;
use crate::engine::{NoObserver, Progress};
use crate::model::FnDensity;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

mod draw_stats;

fn std_normal(dim: usize) -> impl LogDensity {
    FnDensity::new(dim, |x: &[f64], g: &mut [f64]| {
        g.iter_mut().zip(x).for_each(|(g, x)| *g = -x);
        -0.5 * x.iter().map(|v| v * v).sum::<f64>()
    })
}

fn settings(warmup: usize, draws: usize, chains: usize, seed: u64) -> NutsSettings {
    NutsSettings {
        num_warmup: warmup,
        num_draws: draws,
        num_chains: chains,
        seed,
        ..NutsSettings::default()
    }
}

#[test]
fn standard_normal_10d_four_chains() {
    let model = std_normal(10);
    let r = Nuts::new(settings(500, 1000, 4, 7))
        .sample(&model, &mut NoObserver)
        .unwrap();
    assert_eq!((r.draws.rows(), r.draws.cols()), (4000, 10));
    assert_eq!(r.chains.len(), 4);
    assert_eq!(r.chain_of_draw(2999), 2);
    assert_eq!(r.chain_range(1), 1000..2000);
    let (rhat, ess) = (r.rhat.clone().unwrap(), r.ess_bulk.clone().unwrap());
    let means = r.draws.col_means();
    let vars = r.draws.col_variances();
    for j in 0..10 {
        // Monte-Carlo SE of the mean = σ/√ESS with σ = 1; 4 SE ⇒ a false failure per
        // coordinate has probability 6e-5.
        let se = (1.0 / ess[j]).sqrt();
        assert!(
            means[j].abs() < 4.0 * se,
            "mean[{j}] = {} (se {se})",
            means[j]
        );
        // SE of the variance ≈ √(2/ESS₂) ≈ 0.03 with ESS of x² ≳ 2000; 10% ≈ 3 SE.
        assert!((vars[j] - 1.0).abs() < 0.1, "var[{j}] = {}", vars[j]);
        // 4 chains of 1000 well-mixed draws: R̂ − 1 is O(1e-3).
        assert!(rhat[j] < 1.01, "rhat[{j}] = {}", rhat[j]);
    }
    // A 10-d standard normal needs no long trees and no divergences.
    assert_eq!(r.divergences, 0);
    assert!(r.mean_tree_depth > 1.0 && r.mean_tree_depth < 5.0);
    for c in &r.chains {
        assert!(c.step_size > 0.1 && c.step_size < 2.0, "{}", c.step_size);
        assert!(c.init.iter().all(|x| x.abs() <= 2.0));
    }
    assert!(r.log_density.iter().all(|l| l.is_finite()));
    // E-BFMI of a Gaussian tends to 2(1 − ρ₁) = 1 (ρ₁ = ½, the lag-1 autocorrelation of the
    // energy); the leapfrog's energy error adds a little. Measured over 10 seeds × 4 chains of
    // 1000 draws: mean 1.12, sd 0.063, range 1.00–1.28, so ±0.4 around 1 is ≥ 4.4 sd from the
    // mean on either side, and far above the 0.3 warning.
    for (c, e) in r.e_bfmi().into_iter().enumerate() {
        let e = e.unwrap();
        assert!((e - 1.0).abs() < 0.4, "chain {c}: E-BFMI {e}");
    }
    assert!(!r.e_bfmi_warning());
}

/// Solves the symmetric positive-definite system A X = B (A n×n, B n×k, row-major) by
/// Gauss–Jordan elimination; fine for the 3×3 test problem.
fn solve(mut a: Vec<f64>, mut b: Vec<f64>, n: usize, k: usize) -> Vec<f64> {
    for p in 0..n {
        let piv = a[p * n + p];
        for j in 0..n {
            a[p * n + j] /= piv;
        }
        for j in 0..k {
            b[p * k + j] /= piv;
        }
        for i in (0..n).filter(|&i| i != p) {
            let f = a[i * n + p];
            for j in 0..n {
                a[i * n + j] -= f * a[p * n + j];
            }
            for j in 0..k {
                b[i * k + j] -= f * b[p * k + j];
            }
        }
    }
    b
}

#[test]
fn bayesian_linear_regression_matches_closed_form() {
    // y = Xβ + N(0, σ²), β ~ N(0, τ²I): posterior N(μ, Σ) with Σ = (XᵀX/σ² + I/τ²)⁻¹,
    // μ = Σ Xᵀy/σ².
    let (n, d, sigma, tau) = (30usize, 3usize, 1.0f64, 1.0f64);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let beta_true = [1.0, -2.0, 0.5];
    let x: Vec<f64> = (0..n * d)
        .map(|_| StandardNormal.sample(&mut rng))
        .collect();
    let y: Vec<f64> = (0..n)
        .map(|i| {
            let mean: f64 = (0..d).map(|j| x[i * d + j] * beta_true[j]).sum();
            let e: f64 = StandardNormal.sample(&mut rng);
            mean + sigma * e
        })
        .collect();
    let (xm, ym) = (x.clone(), y.clone());
    let model = FnDensity::new(d, move |b: &[f64], g: &mut [f64]| {
        let mut lp = 0.0;
        for (j, gj) in g.iter_mut().enumerate() {
            *gj = -b[j] / (tau * tau);
            lp -= 0.5 * b[j] * b[j] / (tau * tau);
        }
        for i in 0..n {
            let row = &xm[i * d..(i + 1) * d];
            let r = ym[i] - row.iter().zip(b).map(|(a, b)| a * b).sum::<f64>();
            lp -= 0.5 * r * r / (sigma * sigma);
            for j in 0..d {
                g[j] += r * row[j] / (sigma * sigma);
            }
        }
        lp
    });
    let mut prec = vec![0.0; d * d];
    let mut xty = vec![0.0; d];
    for i in 0..n {
        for a in 0..d {
            xty[a] += x[i * d + a] * y[i] / (sigma * sigma);
            for b in 0..d {
                prec[a * d + b] += x[i * d + a] * x[i * d + b] / (sigma * sigma);
            }
        }
    }
    (0..d).for_each(|a| prec[a * d + a] += 1.0 / (tau * tau));
    let identity: Vec<f64> = (0..d * d)
        .map(|i| if i % (d + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let cov = solve(prec.clone(), identity, d, d);
    let mu = solve(prec, xty, d, 1);

    let r = Nuts::new(settings(500, 1000, 4, 3))
        .sample(&model, &mut NoObserver)
        .unwrap();
    let means = r.draws.col_means();
    let ess = r.ess_bulk.clone().unwrap();
    for j in 0..d {
        // SE of the posterior-mean estimate = √Σ_jj / √ESS; 4 SE.
        let se = (cov[j * d + j] / ess[j]).sqrt();
        assert!(
            (means[j] - mu[j]).abs() < 4.0 * se,
            "β{j}: {} vs {}",
            means[j],
            mu[j]
        );
    }
    for a in 0..d {
        for b in 0..d {
            // Cov estimate = mean of z = (β_a − β̄_a)(β_b − β̄_b); its SE is sd(z)/√ESS(z),
            // ESS(z) estimated from the chains themselves; 4.5 SE over 6 distinct entries.
            let z: Vec<Vec<f64>> = (0..r.num_chains)
                .map(|c| {
                    r.chain_range(c)
                        .map(|i| (r.draws.get(i, a) - means[a]) * (r.draws.get(i, b) - means[b]))
                        .collect()
                })
                .collect();
            let refs: Vec<&[f64]> = z.iter().map(Vec::as_slice).collect();
            let flat: Vec<f64> = z.iter().flatten().copied().collect();
            let zm = flat.iter().sum::<f64>() / flat.len() as f64;
            let zsd =
                (flat.iter().map(|v| (v - zm) * (v - zm)).sum::<f64>() / flat.len() as f64).sqrt();
            let se = zsd / diagnostics::ess_mean(&refs).sqrt();
            let want = cov[a * d + b];
            assert!(
                (zm - want).abs() < 4.5 * se,
                "cov[{a},{b}]: {zm} vs {want} (se {se})"
            );
        }
    }
}

/// Neal's funnel with k x's (v ~ N(0, 3²), x_i ~ N(0, e^v)): divergences in the neck.
pub(super) fn funnel(k: usize) -> impl LogDensity {
    FnDensity::new(k + 1, move |p: &[f64], g: &mut [f64]| {
        let v = p[0];
        let inv_var = (-v).exp();
        let ss: f64 = p[1..].iter().map(|x| x * x).sum();
        g[0] = -v / 9.0 + 0.5 * ss * inv_var - 0.5 * k as f64;
        for (gi, x) in g[1..].iter_mut().zip(&p[1..]) {
            *gi = -x * inv_var;
        }
        -v * v / 18.0 - 0.5 * ss * inv_var - 0.5 * k as f64 * v
    })
}

#[test]
fn neals_funnel_reports_divergences() {
    // v ~ N(0, 3²), x_i ~ N(0, (e^{v/2})²), 9 x's: the neck is too narrow for one step size.
    let k = 9;
    let model = funnel(k);
    // 4 chains: the chains explore the neck to different depths, some diverge there. Over
    // seeds 0..6 every run had divergences (warm-up included); seed 0 has 26 after warm-up.
    let r = Nuts::new(settings(500, 1000, 4, 0))
        .sample(&model, &mut NoObserver)
        .unwrap();
    assert!(r.divergences > 0, "no divergences in the funnel");
    assert_eq!(
        r.divergences,
        r.chains.iter().map(|c| c.divergences).sum::<usize>()
    );
    assert!(r.draws.is_finite());
    // The chains disagree about v: R̂ flags the funnel too.
    assert!(r.rhat.as_ref().unwrap()[0] > 1.01);
    // A single chain also runs to the end (it may only diverge during warm-up).
    let r = Nuts::new(settings(500, 1000, 1, 1))
        .sample(&model, &mut NoObserver)
        .unwrap();
    assert!(r.divergences + r.chains[0].warmup_divergences > 0);
    assert!(r.rhat.is_none() && r.ess_bulk.is_none(), "one chain: no R̂");
    assert!(r.draws.is_finite());
}

#[test]
fn non_finite_regions_are_divergences_not_errors() {
    // A half-normal written on ℝ: log p = NaN for x < 0.
    let model = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
        g[0] = -x[0];
        if x[0] < 0.0 {
            f64::NAN
        } else {
            -0.5 * x[0] * x[0]
        }
    });
    let r = Nuts::new(settings(300, 500, 1, 2))
        .sample(&model, &mut NoObserver)
        .unwrap();
    assert!(r.draws.as_slice().iter().all(|x| *x >= 0.0));
    assert!(r.divergences + r.chains[0].warmup_divergences > 0);
}

#[test]
fn same_seed_same_draws() {
    let model = std_normal(3);
    let run = |seed| {
        Nuts::new(settings(100, 100, 3, seed))
            .sample(&model, &mut NoObserver)
            .unwrap()
    };
    let (a, b, c) = (run(5), run(5), run(6));
    assert_eq!(a, b);
    assert_ne!(a.draws, c.draws);
    // Chains differ from each other.
    assert_ne!(a.chain_draws(0).unwrap(), a.chain_draws(1).unwrap());
    assert!(a.chain_draws(3).is_err());
}

#[test]
fn zero_warmup_and_shallow_trees_run() {
    // N(1, I): the gradient at the origin has no zero entry.
    let model = FnDensity::new(4, |x: &[f64], g: &mut [f64]| {
        g.iter_mut().zip(x).for_each(|(g, x)| *g = 1.0 - x);
        -0.5 * x.iter().map(|v| (v - 1.0) * (v - 1.0)).sum::<f64>()
    });
    let s = NutsSettings {
        num_warmup: 0,
        num_draws: 50,
        max_depth: 1,
        init_radius: 0.0,
        ..NutsSettings::numpyro()
    };
    let r = Nuts::new(s.clone())
        .sample(&model, &mut NoObserver)
        .unwrap();
    assert_eq!(r.draws.rows(), 50);
    assert_eq!(r.chains[0].init, vec![0.0; 4]);
    // Depth 1 trees always hit the limit, unless they diverge or turn at once.
    assert!(r.mean_tree_depth <= 1.0);
    assert!(r.chains[0].max_depth_hits > 0);
    // N(0, I) from the origin: zero gradient, which nuts-rs cannot start from.
    let err = Nuts::new(s)
        .sample(&std_normal(4), &mut NoObserver)
        .unwrap_err();
    assert!(matches!(
        err,
        Error::InvalidSettings {
            field: "init_radius",
            ..
        }
    ));
}

#[test]
fn observer_sees_chain_zero_progress() {
    let model = std_normal(2);
    let mut seen: Vec<(u64, u64, &'static str, f64)> = Vec::new();
    let mut obs = |p: &Progress| seen.push((p.step, p.total, p.phase, p.loss));
    let r = Nuts::new(settings(20, 30, 2, 0))
        .sample(&model, &mut obs)
        .unwrap();
    assert_eq!(seen.len(), 50);
    assert_eq!(seen[0].0, 1);
    assert!(seen.iter().all(|s| s.1 == 50));
    assert_eq!(seen[19].2, "warmup");
    assert_eq!(seen[20].2, "sampling");
    // The loss is −log p of chain 0's draws.
    assert_eq!(seen[49].3, -r.log_density[29]);
}

#[test]
fn unrecoverable_model_errors_abort() {
    struct Failing;
    impl crate::PerDraw for Failing {
        fn dim(&self) -> usize {
            2
        }
        fn log_prior(&self, theta: &[f64], _: bool, grad: &mut [f64]) -> Result<f64> {
            if theta[0] > 1.5 {
                return Err(Error::Data("boom".into()));
            }
            grad[0] = -theta[0];
            grad[1] = -theta[1];
            Ok(-0.5 * (theta[0] * theta[0] + theta[1] * theta[1]))
        }
    }
    let err = Nuts::new(settings(200, 200, 2, 0))
        .sample(&Failing, &mut NoObserver)
        .unwrap_err();
    assert!(matches!(err, Error::Data(ref m) if m == "boom"), "{err}");
}

#[test]
fn invalid_settings_are_rejected() {
    let model = std_normal(1);
    let edits: [fn(&mut NutsSettings); 5] = [
        |s| s.num_draws = 0,
        |s| s.num_chains = 0,
        |s| s.target_accept = 1.0,
        |s| s.max_depth = 0,
        |s| s.init_radius = -1.0,
    ];
    for edit in edits {
        let mut s = NutsSettings::default();
        edit(&mut s);
        assert!(matches!(
            Nuts::new(s).sample(&model, &mut NoObserver),
            Err(Error::InvalidSettings { .. })
        ));
    }
    let d = NutsSettings::default();
    assert_eq!(
        (
            d.num_chains,
            d.num_warmup,
            d.num_draws,
            d.target_accept,
            d.max_depth
        ),
        (4, 1000, 1000, 0.8, 10),
        "Stan's defaults"
    );
    assert_eq!(
        (d.mass_matrix, d.keep_warmup),
        (MassMatrix::Diagonal, false)
    );
    let n = NutsSettings::numpyro();
    assert_eq!((n.num_chains, n.num_warmup, n.num_draws), (1, 500, 1000));
    assert_eq!(NutsSettings::uci().num_draws, 3000);
    assert_eq!(NutsSettings::uci().num_warmup, 500);
    let json = serde_json::to_string(&NutsSettings::uci()).unwrap();
    let back: NutsSettings = serde_json::from_str(&json).unwrap();
    assert_eq!(back, NutsSettings::uci());
    let partial: NutsSettings = serde_json::from_str(r#"{"num_chains": 4}"#).unwrap();
    assert_eq!(partial.num_chains, 4);
    assert_eq!(partial.max_depth, 10);
}

#[test]
fn no_finite_start_is_an_error() {
    let model = FnDensity::new(1, |_: &[f64], g: &mut [f64]| {
        g[0] = 0.0;
        f64::NEG_INFINITY
    });
    let err = Nuts::new(settings(10, 10, 1, 0))
        .sample(&model, &mut NoObserver)
        .unwrap_err();
    assert!(matches!(err, Error::NonFinite { .. }));
}

/// A counted model that asks for one call per step (as a Python/JAX function does) when
/// `chains > 0`, and then refuses any call of other than one row per chain.
struct Counted<M> {
    inner: M,
    chains: usize,
    calls: std::sync::atomic::AtomicUsize,
}

impl<M: LogDensity> Counted<M> {
    fn new(inner: M, chains: usize) -> Self {
        Counted {
            inner,
            chains,
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }
    fn calls(&self) -> f64 {
        self.calls.load(std::sync::atomic::Ordering::Relaxed) as f64
    }
}

impl<M: LogDensity> LogDensity for Counted<M> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn one_call_per_step(&self) -> bool {
        self.chains > 0
    }
    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &crate::model::Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> crate::error::Result<()> {
        if self.chains > 0 {
            assert_eq!(logp.len(), self.chains, "one row per chain in every call");
        }
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.log_density_and_grad(theta, batch, logp, grad)
    }
}

#[test]
fn chains_of_a_one_call_model_share_calls_and_draw_as_alone() {
    let run = |model: &dyn LogDensity| {
        Nuts::new(settings(100, 100, 3, 7))
            .sample(model, &mut NoObserver)
            .unwrap()
    };
    let (alone, together) = (
        Counted::new(std_normal(3), 0),
        Counted::new(std_normal(3), 3),
    );
    // Each row of a call is evaluated as alone, so every chain draws what it draws alone.
    assert_eq!(run(&alone), run(&together));
    // One call per round: at least a third of the chains' evaluations (the busiest chain's),
    // and well under all of them.
    let (a, t) = (alone.calls(), together.calls());
    assert!(t >= a / 3.0 && t < 0.6 * a, "{t} calls together, {a} alone");
}
