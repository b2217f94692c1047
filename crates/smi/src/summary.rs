//! Posterior summaries in the constrained space, by parameter name: mean, sd, the 5 %, 50 % and
//! 95 % quantiles and, for MCMC chains, bulk and tail ESS and R̂ (Vehtari et al. 2021), printed
//! as Stan's `stansummary` and ArviZ's `az.summary` print them.

use std::fmt;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::Layout;
use crate::nuts::{ess_bulk, ess_tail, quantile_sorted, split_rhat, NutsResult};

/// The summary of one scalar parameter.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryRow {
    /// The parameter's name in Stan's flattened form (`"mu"`, `"theta[3]"`, `"X[1,2]"`).
    pub name: String,
    /// Mean of the draws.
    pub mean: f64,
    /// Standard deviation of the draws (divisor n − 1; `NaN` for a single draw).
    pub sd: f64,
    /// 5 % quantile (linear interpolation, R's type 7 and NumPy's default).
    pub q5: f64,
    /// Median.
    pub q50: f64,
    /// 95 % quantile.
    pub q95: f64,
    /// Bulk ESS ([`crate::ess_bulk`]) for MCMC chains, `None` for independent draws.
    pub ess_bulk: Option<f64>,
    /// Tail ESS ([`crate::ess_tail`]) for MCMC chains, `None` for independent draws.
    pub ess_tail: Option<f64>,
    /// Rank-normalised split-R̂ ([`crate::split_rhat`]) for MCMC chains, `None` for
    /// independent draws.
    pub rhat: Option<f64>,
}

/// A table of [`SummaryRow`]s, one per constrained scalar parameter, in the layout's order.
///
/// `Display` prints an aligned table (4 significant digits, ESS rounded, R̂ to 3 decimals;
/// the diagnostic columns only for MCMC chains). Diagnostics of a degenerate coordinate (e.g.
/// a constant one, or chains shorter than 4 draws) are `Some(NaN)`, printed `NaN`.
///
/// ```
/// use smi::{Matrix, Summary};
/// let names = vec!["mu".to_string(), "tau".to_string()];
/// let draws = Matrix::from_fn(1000, 2, |i, j| (i as f64 * 0.37 + j as f64).sin());
/// let s = Summary::from_chains(&names, &draws, 4)?;
/// let tau = s.get("tau").expect("a row per name");
/// assert!(tau.rhat.is_some() && tau.q5 < tau.q50 && tau.q50 < tau.q95);
/// println!("{s}");
/// # Ok::<(), smi::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    rows: Vec<SummaryRow>,
    /// Lines printed under the table (a fit's termination, ELBO, k̂ and warnings:
    /// [`crate::Fit::report`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

impl Summary {
    /// The number of draws variational summaries take by default (as 4 chains × 1000 draws of
    /// Stan's defaults); the Monte-Carlo error of a mean is then sd/√4000 ≈ 0.016 sd.
    pub const DEFAULT_DRAWS: usize = 4000;

    /// The summary of independent draws (from a variational posterior): n × K `draws` of the
    /// K parameters `names`; no ESS or R̂.
    ///
    /// # Errors
    /// As [`Summary::from_chains`].
    pub fn from_draws(names: &[String], draws: &Matrix) -> Result<Self> {
        Self::build(names, draws, None)
    }

    /// The summary of MCMC draws: `draws` is (num_chains·n) × K, the chains one after another
    /// (chain c in rows c·n .. (c+1)·n, as [`NutsResult::draws`]), of the K parameters `names`.
    /// ESS and R̂ are computed per parameter over the chains.
    ///
    /// # Errors
    /// [`Error::Shape`] when `names` and the columns of `draws` disagree or the rows are not a
    /// multiple of `num_chains`; [`Error::InvalidSettings`] for no draws or no chains.
    pub fn from_chains(names: &[String], draws: &Matrix, num_chains: usize) -> Result<Self> {
        if num_chains == 0 {
            return Err(Error::invalid("num_chains", "must be at least 1"));
        }
        if !draws.rows().is_multiple_of(num_chains) {
            return Err(Error::shape(
                "summary: draws",
                format!("a multiple of {num_chains} chains"),
                format!("{} rows", draws.rows()),
            ));
        }
        Self::build(names, draws, Some(num_chains))
    }

    /// The summary of a NUTS run in the constrained space of `layout` (the model's layout):
    /// every draw of every chain, with ESS and R̂.
    ///
    /// # Errors
    /// [`Error::Shape`] when `layout` does not match the draws' dimension.
    pub fn from_nuts(result: &NutsResult, layout: &Layout) -> Result<Self> {
        let x = layout.constrain_draws(&result.draws)?;
        Self::from_chains(&layout.constrained_names(), &x, result.num_chains)
    }

    fn build(names: &[String], draws: &Matrix, num_chains: Option<usize>) -> Result<Self> {
        if names.len() != draws.cols() {
            return Err(Error::shape(
                "summary: names",
                format!("{} (the columns of the draws)", draws.cols()),
                names.len(),
            ));
        }
        if draws.rows() == 0 {
            return Err(Error::invalid("draws", "a summary needs at least one draw"));
        }
        let n = draws.rows();
        let rows = names
            .iter()
            .enumerate()
            .map(|(j, name)| {
                let col: Vec<f64> = (0..n).map(|i| draws.get(i, j)).collect();
                let mean = col.iter().sum::<f64>() / n as f64;
                let ss = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>();
                let sd = (ss / (n as f64 - 1.0)).sqrt();
                let diagnostics = num_chains.map(|m| {
                    let refs: Vec<&[f64]> = col.chunks_exact(n / m).collect();
                    (ess_bulk(&refs), ess_tail(&refs), split_rhat(&refs))
                });
                let mut sorted = col;
                sorted.sort_by(f64::total_cmp);
                SummaryRow {
                    name: name.clone(),
                    mean,
                    sd,
                    q5: quantile_sorted(&sorted, 0.05),
                    q50: quantile_sorted(&sorted, 0.5),
                    q95: quantile_sorted(&sorted, 0.95),
                    ess_bulk: diagnostics.map(|d| d.0),
                    ess_tail: diagnostics.map(|d| d.1),
                    rhat: diagnostics.map(|d| d.2),
                }
            })
            .collect();
        Ok(Summary {
            rows,
            notes: Vec::new(),
        })
    }

    /// The lines printed under the table (empty for a bare table).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The same table with `notes` printed under it.
    pub fn with_notes(mut self, notes: Vec<String>) -> Self {
        self.notes = notes;
        self
    }

    /// The rows, one per parameter.
    pub fn rows(&self) -> &[SummaryRow] {
        &self.rows
    }

    /// The row of the parameter `name` (e.g. `"theta[3]"`).
    pub fn get(&self, name: &str) -> Option<&SummaryRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// The largest R̂ over the parameters (`None` without diagnostics; `NaN` if any is).
    pub fn max_rhat(&self) -> Option<f64> {
        self.diagnostic(|r| r.rhat, f64::max)
    }

    /// The smallest of the bulk and tail ESS over the parameters (`None` without
    /// diagnostics; `NaN` if any is).
    pub fn min_ess(&self) -> Option<f64> {
        self.diagnostic(|r| Some(r.ess_bulk?.min(r.ess_tail?)), f64::min)
    }

    fn diagnostic(
        &self,
        get: impl Fn(&SummaryRow) -> Option<f64>,
        pick: impl Fn(f64, f64) -> f64,
    ) -> Option<f64> {
        let values: Option<Vec<f64>> = self.rows.iter().map(get).collect();
        let values = values?;
        if values.iter().any(|v| v.is_nan()) {
            return Some(f64::NAN);
        }
        values.into_iter().reduce(pick)
    }
}

/// `x` to 4 significant digits: fixed notation for 1e-3 ≤ |x| < 1e5, else scientific.
fn significant(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-3..1e5).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.3e}")
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let diagnostics = self.rows.iter().any(|r| r.rhat.is_some());
        let mut header = vec!["", "mean", "sd", "5%", "50%", "95%"];
        if diagnostics {
            header.extend(["ess_bulk", "ess_tail", "r_hat"]);
        }
        let opt = |v: Option<f64>, cell: fn(f64) -> String| v.map_or("-".into(), cell);
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let mut c = vec![r.name.clone()];
                c.extend([r.mean, r.sd, r.q5, r.q50, r.q95].map(significant));
                if diagnostics {
                    c.push(opt(r.ess_bulk, |v| format!("{v:.0}")));
                    c.push(opt(r.ess_tail, |v| format!("{v:.0}")));
                    c.push(opt(r.rhat, |v| format!("{v:.3}")));
                }
                c
            })
            .collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|j| {
                cells
                    .iter()
                    .map(|c| c[j].chars().count())
                    .chain([header[j].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |f: &mut fmt::Formatter<'_>, row: &[&str]| -> fmt::Result {
            write!(f, "{:<w$}", row[0], w = widths[0])?;
            for (cell, &w) in row.iter().zip(&widths).skip(1) {
                write!(f, "  {cell:>w$}")?;
            }
            writeln!(f)
        };
        line(f, &header)?;
        for c in &cells {
            line(f, &c.iter().map(String::as_str).collect::<Vec<_>>())?;
        }
        for n in &self.notes {
            writeln!(f, "{n}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    fn names(k: usize) -> Vec<String> {
        (1..=k).map(|i| format!("x[{i}]")).collect()
    }

    #[test]
    fn moments_and_quantiles_of_known_draws() {
        // Draws 1..=101 in column 0: mean 51, sd √(101·102/12) = 29.30, quantiles by type 7:
        // h = 100p, so 5 % → 6, 50 % → 51, 95 % → 96.
        let draws = Matrix::from_fn(101, 2, |i, j| {
            (i + 1) as f64 * if j == 0 { 1.0 } else { -2.0 }
        });
        let s = Summary::from_draws(&names(2), &draws).unwrap();
        let r = &s.rows()[0];
        assert_eq!((r.mean, r.q5, r.q50, r.q95), (51.0, 6.0, 51.0, 96.0));
        assert!((r.sd - (101.0f64 * 102.0 / 12.0).sqrt()).abs() < 1e-12);
        let r = s.get("x[2]").unwrap();
        assert_eq!((r.mean, r.q5, r.q95), (-102.0, -192.0, -12.0));
        assert_eq!((r.ess_bulk, r.rhat, s.max_rhat()), (None, None, None));
    }

    #[test]
    fn chains_get_diagnostics_and_disagreeing_chains_are_flagged() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        // 4 chains × 500 iid N(0,1) draws; in column 1 the last chain is shifted by 3.
        let draws = Matrix::from_fn(2000, 2, |i, j| {
            let z: f64 = StandardNormal.sample(&mut rng);
            z + if j == 1 && i >= 1500 { 3.0 } else { 0.0 }
        });
        let s = Summary::from_chains(&names(2), &draws, 4).unwrap();
        let ok = &s.rows()[0];
        // iid: R̂ − 1 = O(1/S); ESS ≈ S = 2000 within the estimator's ≈ ±15 %.
        assert!((ok.rhat.unwrap() - 1.0).abs() < 0.01);
        assert!((ok.ess_bulk.unwrap() / 2000.0 - 1.0).abs() < 0.2);
        assert!((ok.ess_tail.unwrap() / 2000.0 - 1.0).abs() < 0.2);
        assert!(s.rows()[1].rhat.unwrap() > 1.3);
        assert!(s.max_rhat().unwrap() > 1.3);
        assert!(s.min_ess().unwrap() < 500.0);
        let text = s.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].ends_with("ess_bulk  ess_tail  r_hat"), "{text}");
        assert!(lines[1].starts_with("x[1]  "), "{text}");
        // Aligned: every line has the header's width.
        assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{text}");
        assert!(Summary::from_chains(&names(2), &draws, 3).is_err());
        assert!(Summary::from_chains(&names(3), &draws, 4).is_err());
        assert!(Summary::from_chains(&names(2), &draws, 0).is_err());
        assert!(Summary::from_draws(&names(2), &Matrix::zeros(0, 2)).is_err());
    }

    /// w ~ Dirichlet(2, 3, 5) on a 3-simplex and v ~ Gamma(3, rate 2) > 0, written on the
    /// constrained space.
    struct DirichletGamma;

    impl crate::model::ConstrainedModel for DirichletGamma {
        fn layout(&self) -> Layout {
            let mut l = Layout::default();
            l.push_constrained("w", vec![3], crate::model::Constraint::Simplex)
                .unwrap();
            l.push_constrained("v", vec![], crate::model::Constraint::Positive)
                .unwrap();
            l
        }
        fn log_prior(&self, x: &[f64], g: &mut [f64]) -> Result<f64> {
            let alpha = [2.0, 3.0, 5.0];
            let mut lp = 0.0;
            for k in 0..3 {
                lp += (alpha[k] - 1.0) * x[k].ln();
                g[k] += (alpha[k] - 1.0) / x[k];
            }
            g[3] += 2.0 / x[3] - 2.0;
            Ok(lp + 2.0 * x[3].ln() - 2.0 * x[3])
        }
    }

    #[test]
    fn fit_summaries_are_in_the_constrained_space_by_name() {
        use crate::{
            fit, Constrained, Method, MethodSettings, NoObserver, NutsSettings, RunSettings,
        };
        let model = Constrained::new(DirichletGamma).unwrap();
        let nuts = MethodSettings::Nuts(NutsSettings {
            seed: 3,
            ..NutsSettings::default()
        });
        let f = fit(&model, &nuts, &RunSettings::steps(1), &mut NoObserver).unwrap();
        assert_eq!(f.names(), ["w[1]", "w[2]", "w[3]", "v"]);
        let s = f.summary(Summary::DEFAULT_DRAWS, 0).unwrap();
        // Dirichlet means α/Σα, Gamma(3, 2) mean 1.5. With 4 × 1000 draws and ESS ≳ 1000 the
        // Monte-Carlo sd of the means is ≤ sd/√1000: 0.004 for w (sd ≤ 0.16), 0.03 for v
        // (sd 0.87); the tolerances are 5 of those. Without the Jacobian of the simplex the
        // means would be those of Dirichlet(1, 2, 4)-like shapes, off by ≥ 0.05.
        for (name, mean, tol) in [
            ("w[1]", 0.2, 0.02),
            ("w[2]", 0.3, 0.02),
            ("w[3]", 0.5, 0.02),
            ("v", 1.5, 0.15),
        ] {
            let r = s.get(name).unwrap();
            assert!((r.mean - mean).abs() < tol, "{name}: {r:?}\n{s}");
            assert!(r.rhat.unwrap() < 1.01, "{name}: {r:?}");
            assert!(
                r.ess_bulk.unwrap() > 1000.0 && r.ess_tail.unwrap() > 500.0,
                "{name}: {r:?}"
            );
        }
        // Every constrained NUTS draw is on the simplex.
        let x = f.draws(1, 0).unwrap();
        assert_eq!((x.rows(), x.cols()), (4000, 4));
        assert!(x
            .iter_rows()
            .all(|r| (r[0] + r[1] + r[2] - 1.0).abs() < 1e-12 && r[3] > 0.0));
        // A variational method: draws of the fitted mixture, by name, without diagnostics.
        let ovi = Method::Ovi.preset(50).with_seed(1);
        let f = fit(&model, &ovi, &RunSettings::steps(50), &mut NoObserver).unwrap();
        let s = f.summary(500, 7).unwrap();
        assert_eq!(s.rows().len(), 4);
        assert_eq!(s.rows()[3].name, "v");
        assert!(s
            .rows()
            .iter()
            .all(|r| r.rhat.is_none() && r.ess_tail.is_none()));
        assert_eq!(f.draws(500, 7).unwrap(), f.draws(500, 7).unwrap(), "seeded");
    }

    #[test]
    fn numbers_print_with_four_significant_digits() {
        assert_eq!(significant(6.150_49), "6.150");
        assert_eq!(significant(-15.4949), "-15.49");
        assert_eq!(significant(0.000_982_565), "9.826e-4");
        assert_eq!(significant(0.999_647), "0.9996");
        assert_eq!(significant(123_456.0), "1.235e5");
        assert_eq!(significant(0.0), "0");
        assert_eq!(significant(f64::NAN), "NaN");
    }
}
