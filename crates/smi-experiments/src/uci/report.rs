//! The UCI report: the paper's Table 3 and Table 6 (`uci.md`) from `uci.jsonl`, with the
//! not-worse-than-best marks of a one-sided Mann–Whitney U test and a time table.

use super::*;
use crate::plot::thousands;

/// Per-split values of one (split kind, data set, method) cell.
#[derive(Default, Clone)]
pub(super) struct Cell {
    pub(super) config: String,
    /// split → (rmse, nll, rmse_paper, nll_paper, seconds_per_step, cpu_seconds, steps); NaN
    /// where the record lacks the value (`cpu_seconds`: records of binaries older than the field)
    pub(super) splits: BTreeMap<u64, [f64; 7]>,
}

impl Cell {
    /// Mean ± std (ddof 0) over the splits of value `idx` (see `splits`), its non-finite
    /// values left out; `None` when none is finite.
    pub(super) fn stats(&self, idx: usize) -> Option<MeanStd> {
        let v: Vec<f64> = self
            .splits
            .values()
            .map(|s| s[idx])
            .filter(|x| x.is_finite())
            .collect();
        MeanStd::of(&v).ok()
    }
}

/// Rebuilds `uci.md` from `uci.jsonl` (nothing when there are no records); records of failed
/// units are left out.
pub fn report(out: &Path) -> Result<()> {
    let recs = records::read_succeeded(out, EXPERIMENT)?;
    if recs.is_empty() {
        return Ok(());
    }
    // (kind, dataset, method) → config → cell
    let mut by: BTreeMap<(String, UciDataset, Method), BTreeMap<String, Cell>> = BTreeMap::new();
    for r in &recs {
        let parsed = (|| {
            let ds: UciDataset = records::text(r, "dataset")?.parse().ok()?;
            let method: Method = records::text(r, "method")?.parse().ok()?;
            let kind = records::text(r, "split_kind")?.to_string();
            let split = records::get(r, "split")?.as_u64()?;
            let config = records::text(r, "config")?.to_string();
            let v = [
                "metrics.rmse",
                "metrics.nll",
                "metrics.rmse_paper",
                "metrics.nll_paper",
                "metrics.seconds_per_step",
                "cpu_seconds",
                "metrics.steps",
            ]
            .map(|k| records::num(r, k).unwrap_or(f64::NAN));
            Some((kind, ds, method, split, config, v))
        })();
        let Some((kind, ds, method, split, config, v)) = parsed else {
            eprintln!("warning: uci.jsonl: skipping a record without the expected keys");
            continue;
        };
        let cell = by
            .entry((kind, ds, method))
            .or_default()
            .entry(config.clone())
            .or_insert_with(|| Cell {
                config,
                ..Cell::default()
            });
        cell.splits.insert(split, v); // a later record of the same split replaces an earlier one
    }
    // Runs with a reproduced NumPyro defect (`defect=` in the config) and ablations of the
    // paper's settings (`ablation`) are reported apart and never stand for their method.
    let mut defects: Vec<((String, UciDataset, Method), Cell)> = Vec::new();
    let mut ablations: Vec<((String, UciDataset, Method), Cell)> = Vec::new();
    for (k, configs) in by.iter_mut() {
        let marked: Vec<String> = configs
            .keys()
            .filter(|c| c.contains("defect=") || is_ablation(c))
            .cloned()
            .collect();
        for c in marked {
            if let Some(cell) = configs.remove(&c) {
                if c.contains("defect=") {
                    defects.push((k.clone(), cell));
                } else {
                    ablations.push((k.clone(), cell));
                }
            }
        }
    }
    // One config per cell: the one with the most splits (ties: the later config string).
    let cells: BTreeMap<(String, UciDataset, Method), Cell> = by
        .into_iter()
        .filter_map(|(k, configs)| {
            configs
                .into_values()
                .max_by_key(|c| c.splits.len())
                .map(|c| (k, c))
        })
        .collect();

    let mut md = String::new();
    md.push_str("# UCI regression (docs/algorithms.md §7.3; the paper's Table 3 and Table 6)\n\n");
    md.push_str(&format!("> {}\n\n", settings_line(&cells)));
    md.push_str(
        "Mean ± std (ddof 0) over splits. **Bold**: not worse than the best method \
         (one-sided Mann–Whitney U, p ≥ 0.05); _underscored_: not worse than the best \
         variational method (NUTS excluded). `n` in the configuration list = number of splits.\n\n",
    );
    let kinds: Vec<String> = ["standard", "gap10"]
        .into_iter()
        .filter(|k| cells.keys().any(|(kk, _, _)| kk == k))
        .map(str::to_string)
        .collect();
    let variants = [
        (
            "Paper metrics",
            "RMSE over draws and points jointly; NLL per particle for SVGD/ASVGD (the paper's \
             evaluation code), mixture predictive NLL for the others.",
            2usize,
            3usize,
        ),
        (
            "Proper metrics",
            "RMSE of the predictive mean; NLL of the mixture predictive for every method.",
            0,
            1,
        ),
    ];
    md.push_str(&super::paper_table::beside_the_paper(&cells));
    md.push_str(&super::peers::beside_deep_ensembles(&cells)?);
    for (title, what, ir, in_) in variants {
        md.push_str(&format!("## {title}\n\n{what}\n\n"));
        for kind in &kinds {
            for (metric, idx) in [("NLL", in_), ("RMSE", ir)] {
                md.push_str(&format!(
                    "### {metric}, {} splits ({})\n\n",
                    kind_title(kind),
                    title.to_lowercase()
                ));
                md.push_str(&metric_table(&cells, kind, idx));
                md.push('\n');
            }
        }
    }
    md.push_str("## Seconds per step (Table 6)\n\nMean over splits of training seconds / steps (NUTS: per iteration, warm-up included).\n\n");
    for kind in &kinds {
        md.push_str(&format!("### {} splits\n\n", kind_title(kind)));
        md.push_str(&time_table(&cells, kind));
        md.push('\n');
    }
    if !defects.is_empty() {
        md.push_str(&variant_table(
            "Reproduced NumPyro defects",
            "Runs of `smi reproduce uci --defect` (docs/algorithms.md §2.8, §2.9, §2.11)",
            &defects,
            &cells,
        ));
    }
    if !ablations.is_empty() {
        md.push_str(&variant_table(
            "Ablations of the paper's settings",
            "Runs of `smi reproduce uci` with --particles, --elbo-draws, --init-scale, \
             --loss-temperature, --attraction numpyro, --standardize-y or --ablation",
            &ablations,
            &cells,
        ));
    }
    md.push_str("## Configurations\n\n");
    let rows: Vec<Vec<String>> = cells
        .iter()
        .chain(defects.iter().map(|(k, c)| (k, c)))
        .chain(ablations.iter().map(|(k, c)| (k, c)))
        .map(|((kind, ds, m), c)| {
            vec![
                kind.clone(),
                ds.to_string(),
                m.label().to_string(),
                c.splits.len().to_string(),
                format!("`{}`", c.config),
            ]
        })
        .collect();
    md.push_str(&tables::markdown(
        &["split kind", "dataset", "method", "n", "config"],
        &rows,
    ));
    let p = out.join(format!("{EXPERIMENT}.md"));
    smi_fit::files::write_atomic(&p, md.as_bytes())
        .with_context(|| format!("cannot write {}", p.display()))?;
    Ok(())
}

/// Whether `config` is an ablation of the paper's settings (`smi reproduce uci --ablation`,
/// `--attraction numpyro` or `--standardize-y`).
pub(super) fn is_ablation(config: &str) -> bool {
    config
        .split('|')
        .any(|f| f == "ablation" || f == "y=std" || f.starts_with("attraction="))
}

/// What `config` changes against `shown` (the configuration standing for the same method):
/// its fields that `shown` lacks, without the `ablation` mark.
fn changed_fields(config: &str, shown: Option<&str>) -> String {
    let theirs: BTreeSet<&str> = shown.map(|s| s.split('|').collect()).unwrap_or_default();
    let changed: Vec<&str> = config
        .split('|')
        .filter(|f| *f != "ablation" && !theirs.contains(f))
        .collect();
    if changed.is_empty() {
        "–".to_string()
    } else {
        format!("`{}`", changed.join("|"))
    }
}

/// A section of runs that differ from the paper's settings on purpose (a reproduced NumPyro
/// defect, an ablation): per run, what it changes, the paper metrics and steps over its splits,
/// beside the shown configuration of the same method on the same splits.
fn variant_table(
    title: &str,
    intro: &str,
    variants: &[((String, UciDataset, Method), Cell)],
    cells: &BTreeMap<(String, UciDataset, Method), Cell>,
) -> String {
    let stat = |values: Vec<f64>| match MeanStd::of(&values) {
        Ok(s) => tables::mean_std(s.mean, s.std, digits(s.mean.abs())),
        Err(_) => "–".to_string(),
    };
    let mut rows = Vec::new();
    for ((kind, ds, m), c) in variants {
        let shown = cells.get(&(kind.clone(), *ds, *m));
        let splits: Vec<u64> = c.splits.keys().copied().collect();
        let ours = |idx: usize| stat(c.splits.values().map(|v| v[idx]).collect());
        let without = |idx: usize| {
            shown
                .map(|cc| {
                    stat(
                        splits
                            .iter()
                            .filter_map(|s| cc.splits.get(s).map(|v| v[idx]))
                            .collect(),
                    )
                })
                .unwrap_or_else(|| "–".to_string())
        };
        let steps: Vec<f64> = c.splits.values().map(|v| v[6]).collect();
        let mean_steps = if steps.iter().all(|v| v.is_finite()) {
            thousands((steps.iter().sum::<f64>() / steps.len().max(1) as f64).round() as u64)
        } else {
            "–".to_string()
        };
        rows.push(vec![
            kind.clone(),
            ds.to_string(),
            m.label().to_string(),
            changed_fields(&c.config, shown.map(|cc| cc.config.as_str())),
            splits
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            mean_steps,
            ours(3),
            without(3),
            ours(2),
            without(2),
        ]);
    }
    format!(
        "## {title}\n\n{intro}: paper metrics, mean ± std over their splits, beside the \
         configuration shown above for the same method on the same splits; \"changes\" lists the \
         fields of the run's config that the shown one lacks.\n\n{}\n",
        tables::markdown(
            &[
                "split kind",
                "dataset",
                "method",
                "changes",
                "splits",
                "steps (mean)",
                "NLL",
                "NLL shown",
                "RMSE",
                "RMSE shown",
            ],
            &rows,
        )
    )
}

/// The settings line of `uci.md`: the step budgets of the configurations shown (`--quick`: 200,
/// the paper: 60 000) and the splits per cell; the full configurations are listed at the end.
fn settings_line(cells: &BTreeMap<(String, UciDataset, Method), Cell>) -> String {
    let mut budgets: Vec<u64> = cells
        .values()
        .filter_map(|c| {
            c.config
                .split('|')
                .find_map(|t| t.strip_prefix("steps="))
                .and_then(|v| v.parse().ok())
        })
        .collect();
    budgets.sort_unstable();
    budgets.dedup();
    let kind = match budgets.as_slice() {
        [60_000] => "paper step budget",
        [200] => "quick run (--quick)",
        _ => "custom step budget",
    };
    let list = budgets
        .iter()
        .map(|&b| thousands(b))
        .collect::<Vec<_>>()
        .join(" / ");
    let splits: Vec<usize> = cells.values().map(|c| c.splits.len()).collect();
    let (lo, hi) = (
        splits.iter().copied().min().unwrap_or(0),
        splits.iter().copied().max().unwrap_or(0),
    );
    let n = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    };
    format!(
        "Settings: {kind}; at most {list} steps per fit (paper: 60 000); splits per cell: {n} \
         (paper: 20, protein 5); every configuration is listed at the end."
    )
}

pub(super) fn kind_title(kind: &str) -> &str {
    match kind {
        "standard" => "Standard",
        "gap10" => "Gap10",
        k => k,
    }
}

/// Decimals for a row whose largest |mean| is `scale`.
pub(super) fn digits(scale: f64) -> usize {
    if scale < 0.1 {
        4
    } else if scale < 1.0 {
        3
    } else {
        2
    }
}

/// The data sets and the methods with cells of split kind `kind`, each sorted and distinct.
fn rows_and_columns(
    cells: &BTreeMap<(String, UciDataset, Method), Cell>,
    kind: &str,
) -> (Vec<UciDataset>, Vec<Method>) {
    let keys = cells.keys().filter(|(k, _, _)| k == kind);
    let datasets: BTreeSet<UciDataset> = keys.clone().map(|(_, d, _)| *d).collect();
    let methods: BTreeSet<Method> = keys.map(|(_, _, m)| *m).collect();
    (
        datasets.into_iter().collect(),
        methods.into_iter().collect(),
    )
}

/// The Table 3 block of one metric (`idx` into the cell values) for one split kind.
fn metric_table(
    cells: &BTreeMap<(String, UciDataset, Method), Cell>,
    kind: &str,
    idx: usize,
) -> String {
    let (datasets, methods) = rows_and_columns(cells, kind);
    let mut header = vec!["dataset"];
    header.extend(methods.iter().map(|m| m.label()));
    let mut rows = Vec::new();
    for ds in datasets {
        // Per-method samples (finite values only).
        let samples: Vec<Option<Vec<f64>>> = methods
            .iter()
            .map(|m| {
                cells.get(&(kind.to_string(), ds, *m)).map(|c| {
                    c.splits
                        .values()
                        .map(|v| v[idx])
                        .filter(|v| v.is_finite())
                        .collect::<Vec<f64>>()
                })
            })
            .map(|s| s.filter(|v| !v.is_empty()))
            .collect();
        let present: Vec<usize> = (0..methods.len())
            .filter(|&k| samples[k].is_some())
            .collect();
        let all: Vec<&[f64]> = present
            .iter()
            .filter_map(|&k| samples[k].as_deref())
            .collect();
        let bold = marks(&all);
        let var: Vec<usize> = present
            .iter()
            .copied()
            .filter(|&k| methods[k] != Method::Nuts)
            .collect();
        let var_samples: Vec<&[f64]> = var.iter().filter_map(|&k| samples[k].as_deref()).collect();
        let under = marks(&var_samples);
        let stats: Vec<Option<MeanStd>> = samples
            .iter()
            .map(|s| s.as_deref().and_then(|v| MeanStd::of(v).ok()))
            .collect();
        let scale = stats
            .iter()
            .flatten()
            .map(|s| s.mean.abs())
            .fold(0.0, f64::max);
        let dg = digits(scale);
        let mut row = vec![ds.to_string()];
        for (k, st) in stats.iter().enumerate() {
            let Some(st) = st else {
                row.push("–".to_string());
                continue;
            };
            let mut s = tables::mean_std(st.mean, st.std, dg);
            // Whether `k` is among `keys` and its mark is set.
            let marked = |keys: &[_], marks: &[bool]| {
                keys.iter()
                    .position(|&p| p == k)
                    .and_then(|i| marks.get(i).copied())
                    .unwrap_or(false)
            };
            if marked(&present, &bold) {
                s = format!("**{s}**");
            }
            if marked(&var, &under) {
                s = format!("_{s}_");
            }
            row.push(s);
        }
        rows.push(row);
    }
    tables::markdown(&header, &rows)
}

/// `not_worse_than_best` marks (lower is better); none when the test cannot be made.
fn marks(samples: &[&[f64]]) -> Vec<bool> {
    if samples.is_empty() {
        return Vec::new();
    }
    not_worse_than_best(samples, Better::Lower, PAPER_ALPHA).unwrap_or_default()
}

fn time_table(cells: &BTreeMap<(String, UciDataset, Method), Cell>, kind: &str) -> String {
    let (datasets, methods) = rows_and_columns(cells, kind);
    let mut header = vec!["dataset"];
    header.extend(methods.iter().map(|m| m.label()));
    let rows: Vec<Vec<String>> = datasets
        .into_iter()
        .map(|ds| {
            let mut row = vec![ds.to_string()];
            for m in &methods {
                let v: Vec<f64> = cells
                    .get(&(kind.to_string(), ds, *m))
                    .map(|c| {
                        c.splits
                            .values()
                            .map(|v| v[4])
                            .filter(|v| v.is_finite())
                            .collect()
                    })
                    .unwrap_or_default();
                row.push(match MeanStd::of(&v) {
                    Ok(s) => format!("{:.2e}", s.mean),
                    Err(_) => "–".to_string(),
                });
            }
            row
        })
        .collect();
    tables::markdown(&header, &rows)
}
