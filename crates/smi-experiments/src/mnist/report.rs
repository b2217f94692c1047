//! The MNIST report: the paper's Table 4 (paper metrics) and the standard metrics per
//! network depth (`mnist.md`) from `mnist.jsonl`.

use super::*;
use crate::plot::thousands;
use std::cmp::Reverse;

/// One column of a table: record key, header, direction.
struct Column {
    key: &'static str,
    header: &'static str,
    better: Better,
}

/// A [`Column`] in one line.
const fn col(key: &'static str, header: &'static str, better: Better) -> Column {
    Column {
        key,
        header,
        better,
    }
}

const PAPER_COLUMNS: [Column; 6] = [
    col("conf", "Conf↑", Better::Higher),
    col("nll", "NLL↓", Better::Lower),
    col("acc", "Acc↑", Better::Higher),
    col("brier", "Brier↓", Better::Lower),
    col("ece", "ECE↓", Better::Lower),
    col("mce", "MCE↓", Better::Lower),
];

const STANDARD_COLUMNS: [Column; 4] = [
    col("acc_argmax", "Acc (argmax)↑", Better::Higher),
    col("nll", "NLL↓", Better::Lower),
    col("ece_weighted", "ECE (weighted)↓", Better::Lower),
    col("mce_weighted", "MCE (non-empty bins)↓", Better::Lower),
];

/// The per-draw values of `key` in a record (finite values only), or the mean alone when the
/// record has no per-draw array.
pub(super) fn samples(r: &Map<String, Value>, key: &str) -> Vec<f64> {
    match records::get(r, &format!("metrics.per_draw.{key}")).and_then(Value::as_array) {
        Some(a) => a
            .iter()
            .filter_map(Value::as_f64)
            .filter(|v| v.is_finite())
            .collect(),
        None => records::num(r, &format!("metrics.{key}"))
            .filter(|v| v.is_finite())
            .into_iter()
            .collect(),
    }
}

/// Compact `mean ± std` like the paper (`.979 ± .001`).
pub(super) fn cell(st: MeanStd) -> String {
    let strip = |v: f64| {
        let s = format!("{v:.3}");
        if let Some(rest) = s.strip_prefix("0.") {
            format!(".{rest}")
        } else if let Some(rest) = s.strip_prefix("-0.") {
            format!("-.{rest}")
        } else {
            s
        }
    };
    format!("{} ± {}", strip(st.mean), strip(st.std))
}

fn metric_table(rows: &[(Method, &Map<String, Value>)], columns: &[Column]) -> String {
    let mut header = vec!["method"];
    header.extend(columns.iter().map(|c| c.header));
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(m, _)| vec![m.label().to_string()])
        .collect();
    for c in columns {
        let s: Vec<Vec<f64>> = rows.iter().map(|(_, r)| samples(r, c.key)).collect();
        let present: Vec<usize> = (0..rows.len()).filter(|&k| !s[k].is_empty()).collect();
        let sub: Vec<&[f64]> = present.iter().map(|&k| s[k].as_slice()).collect();
        let bold = if sub.is_empty() {
            Vec::new()
        } else {
            not_worse_than_best(&sub, c.better, PAPER_ALPHA).unwrap_or_default()
        };
        for (k, out) in cells.iter_mut().enumerate() {
            let text = match MeanStd::of(&s[k]) {
                Ok(st) => {
                    let t = cell(st);
                    let b = present
                        .iter()
                        .position(|&p| p == k)
                        .and_then(|i| bold.get(i).copied())
                        .unwrap_or(false);
                    if b {
                        format!("**{t}**")
                    } else {
                        t
                    }
                }
                Err(_) => "–".to_string(),
            };
            out.push(text);
        }
    }
    tables::markdown(&header, &cells)
}

/// The settings line of `mnist.md`: epochs, training and test images and predictive draws of
/// the records shown, quick (`--quick`: 1 epoch on 512 images) or the paper's (100 epochs on
/// 60 000 images, 50 draws).
fn settings_line<'a>(recs: impl Iterator<Item = &'a Map<String, Value>>) -> String {
    let mut seen: [Vec<u64>; 4] = Default::default();
    for r in recs {
        for (i, k) in ["epochs", "train_size", "test_size", "draws"]
            .iter()
            .enumerate()
        {
            if let Some(v) = records::get(r, k).and_then(Value::as_u64) {
                if !seen[i].contains(&v) {
                    seen[i].push(v);
                }
            }
        }
    }
    let list = |v: &[u64]| {
        v.iter()
            .map(|&n| thousands(n))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let kind = match (seen[0].as_slice(), seen[1].as_slice()) {
        ([100], [60_000]) => "paper settings",
        ([1], [512]) => "quick run (--quick)",
        _ => "reduced or custom run",
    };
    format!(
        "Settings: {kind}; epochs: {}, training images: {} (paper: 100 epochs on 60 000); \
         test images: {}; predictive draws: {} (paper: 50).",
        list(&seen[0]),
        list(&seen[1]),
        list(&seen[2]),
        list(&seen[3])
    )
}

/// Where a record stands in the tables: network depth, training length (epochs, then training
/// images; the longest first) and method.
type RunKey = (u64, Reverse<u64>, Reverse<u64>, Method);

/// The [`RunKey`] of a record: `None` without layers or a known method (a missing epoch or
/// image count reads as 0).
fn run_key(r: &Map<String, Value>) -> Option<RunKey> {
    let l = records::get(r, "layers")?.as_u64()?;
    let m: Method = records::text(r, "method")?.parse().ok()?;
    let count = |k: &str| records::get(r, k).and_then(Value::as_u64).unwrap_or(0);
    Some((l, Reverse(count("epochs")), Reverse(count("train_size")), m))
}

/// Rebuilds `mnist.md` from `mnist.jsonl` (nothing when there are no records); records of
/// failed units are left out.
pub fn report(out: &Path) -> Result<()> {
    let recs = records::read_succeeded(out, EXPERIMENT)?;
    if recs.is_empty() {
        return Ok(());
    }
    // (layers, training length, method) → the latest record; the longest runs first.
    let mut latest: BTreeMap<RunKey, &Map<String, Value>> = BTreeMap::new();
    // Runs with a reproduced NumPyro defect (`defect=` in the config) or another variant of
    // the paper's settings (NumPyro's attraction normalisation, another m for SMI, a GPU's
    // random streams) never stand for their method: they get sections of their own.
    let mut defects: Vec<&Map<String, Value>> = Vec::new();
    let mut variants: Vec<&Map<String, Value>> = Vec::new();
    for r in &recs {
        let config = records::text(r, "config").unwrap_or("");
        if config.contains("defect=") {
            defects.push(r);
            continue;
        }
        if is_variant(config) {
            variants.push(r);
            continue;
        }
        match run_key(r) {
            Some(k) => {
                latest.insert(k, r);
            }
            None => eprintln!("warning: mnist.jsonl: skipping a record without layers/method"),
        }
    }
    // The paper's comparison: per (layers, method) the longest run (the first in key order).
    let mut longest: BTreeMap<(u64, Method), &Map<String, Value>> = BTreeMap::new();
    for (&(l, _, _, m), r) in &latest {
        longest.entry((l, m)).or_insert(*r);
    }
    let groups: BTreeSet<(u64, Reverse<u64>, Reverse<u64>)> =
        latest.keys().map(|&(l, e, n, _)| (l, e, n)).collect();
    let mut md = String::new();
    md.push_str("# MNIST classification (docs/algorithms.md §7.4; the paper's Table 4)\n\n");
    md.push_str(&format!(
        "> {}\n\n",
        settings_line(latest.values().copied())
    ));
    md.push_str(
        "Mean ± std (ddof 0) over predictive draws (SVGD/ASVGD: the 5 particles; MAP: its one \
         point, evaluated once per draw so only the sampled-label metrics vary). Paper metrics: \
         Conf and Acc with labels sampled from each draw's predictive, NLL, Brier, and the \
         paper's unweighted 100-bin ECE/MCE with its empty-bin rule. **Bold**: not worse than \
         the best method by a one-sided Mann–Whitney U test on the per-draw values (p ≥ 0.05). \
         One pair of tables per network depth and training length (epochs, training images), \
         the longest first: each cell uses the latest record of its method at that length, so \
         the test compares runs of equal length.\n\n",
    );
    for &(l, Reverse(epochs), Reverse(train)) in &groups {
        let rows: Vec<(Method, &Map<String, Value>)> = TABLE
            .iter()
            .filter_map(|m| {
                latest
                    .get(&(l, Reverse(epochs), Reverse(train), *m))
                    .map(|r| (*m, *r))
            })
            .collect();
        let length = format!("{epochs} epochs on {} images", thousands(train));
        md.push_str(&format!(
            "## {l}-hidden-layer network, {length}, paper metrics\n\n"
        ));
        md.push_str(&metric_table(&rows, &PAPER_COLUMNS));
        md.push('\n');
        md.push_str(&format!(
            "## {l}-hidden-layer network, {length}, standard metrics\n\n\
             Argmax accuracy, NLL, count-weighted ECE and MCE over non-empty bins (100 bins).\n\n"
        ));
        md.push_str(&metric_table(&rows, &STANDARD_COLUMNS));
        md.push('\n');
    }
    md.push_str(&super::paper_table::beside_the_paper(&longest));
    if !defects.is_empty() {
        md.push_str(&variant_section(
            "Reproduced NumPyro defects",
            "Runs of `smi reproduce mnist --defect` (docs/algorithms.md §2.8, §2.9)",
            &defects,
        ));
    }
    if !variants.is_empty() {
        md.push_str(&variant_section(
            "Variants of the paper's settings",
            "Runs of `smi reproduce mnist` with `--attraction numpyro` (docs/algorithms.md \
             §2.8), `--particles`, `--elbo-draws`, `--init-scale`, `--lr`, \
             `--loss-temperature`, `--scale-lr-factor` or `--device cuda`, without a defect",
            &variants,
        ));
    }
    md.push_str("## Runs and time per epoch\n\n");
    md.push_str(
        "Seconds per epoch = training seconds / epochs (evaluation and checkpoint writes \
         excluded); per full epoch = seconds per step × ⌊N/128⌋, the projection when epochs \
         were cut by --max-steps-per-epoch. CPU s/full epoch: process CPU time (all threads) per \
         step × ⌊N/128⌋, independent of other load on the machine.\n\n",
    );
    let header = [
        "layers",
        "method",
        "epochs",
        "steps",
        "train images",
        "test images",
        "draws",
        "s/epoch",
        "s/full epoch",
        "s/step",
        "CPU s/full epoch",
    ];
    let fmt = |v: Option<f64>, prec: usize| v.map_or("–".to_string(), |x| format!("{x:.prec$}"));
    let rows: Vec<Vec<String>> = latest
        .iter()
        .map(|(&(l, _, _, m), r)| {
            let int = |k: &str| {
                records::get(r, k)
                    .and_then(Value::as_u64)
                    .map_or("–".to_string(), |v| v.to_string())
            };
            vec![
                l.to_string(),
                m.label().to_string(),
                int("epochs"),
                int("steps"),
                int("train_size"),
                int("test_size"),
                int("draws"),
                fmt(records::num(r, "metrics.seconds_per_epoch"), 1),
                fmt(records::num(r, "metrics.seconds_per_full_epoch"), 1),
                fmt(records::num(r, "metrics.seconds_per_step"), 3),
                fmt(records::num(r, "metrics.cpu_seconds_per_full_epoch"), 1),
            ]
        })
        .collect();
    md.push_str(&tables::markdown(&header, &rows));
    md.push_str("\n## Configurations\n\n");
    for (&(l, Reverse(epochs), _, m), r) in &latest {
        md.push_str(&format!(
            "- {l}-layer {}, {epochs} epochs: `{}`\n",
            m.label(),
            records::text(r, "config").unwrap_or("?")
        ));
    }
    let path = out.join("mnist.md");
    smi_fit::files::write_atomic(&path, md.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// A section of runs that differ from the paper's settings on purpose: the paper metrics of
/// each run, its configuration in the last column.
fn variant_section(title: &str, intro: &str, runs: &[&Map<String, Value>]) -> String {
    let mut header = vec!["layers", "method"];
    header.extend(PAPER_COLUMNS.iter().map(|c| c.header));
    header.push("config");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = vec![
                records::get(r, "layers")
                    .and_then(Value::as_u64)
                    .map_or("–".to_string(), |v| v.to_string()),
                records::text(r, "method").unwrap_or("?").to_string(),
            ];
            row.extend(
                PAPER_COLUMNS
                    .iter()
                    .map(|c| MeanStd::of(&samples(r, c.key)).map_or("–".to_string(), cell)),
            );
            row.push(format!("`{}`", records::text(r, "config").unwrap_or("?")));
            row
        })
        .collect();
    format!(
        "## {title}\n\n{intro}: paper metrics of each run (its configuration in the last \
         column), apart from the tables above.\n\n{}\n",
        tables::markdown(&header, &rows)
    )
}

/// Whether a record's config is a variant of the paper's settings: NumPyro's attraction
/// normalisation, SMI with other than the paper's 5 particles or 55 ELBO draws (`m=M S=S`; a
/// quick run's `train=512` keeps its S = 10 without being a variant), initial guide scale
/// (`scale=`) or Adagrad rate (`adagrad(LR)` other than [`super::adagrad_lr`] of the config's
/// `layers=`), or with a likelihood temperature (`tau=`) or a factor on the scales' step
/// (`scale_lr=`), or a GPU run.
pub(super) fn is_variant(config: &str) -> bool {
    let value = |prefix: &str, suffix: &str| -> Option<f64> {
        config
            .split(' ')
            .find_map(|t| t.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok())
    };
    let scale = value("normal(init=uniform(2),scale=", ")");
    let lr = value("adagrad(", ")");
    let layers = value("layers=", "").map(|l| l as usize);
    let other_lr = lr
        .zip(layers)
        .is_some_and(|(lr, l)| lr != super::adagrad_lr(l));
    let smi_particles_draws =
        config
            .split(' ')
            .zip(config.split(' ').skip(1))
            .find_map(|(a, b)| {
                let m = a.strip_prefix("m=")?.parse::<usize>().ok()?;
                let s = b.strip_prefix("S=")?.parse::<usize>().ok()?;
                Some((m, s))
            });
    let quick_train = format!("train={}", super::QUICK_TRAIN);
    let quick = config.split(' ').any(|t| t == quick_train);
    config.contains("attraction=")
        || config.contains("tau=")
        || config.contains("scale_lr=")
        || config.contains("device=")
        || smi_particles_draws
            .is_some_and(|(m, s)| m != super::PARTICLES || (s != super::SMI_ELBO_DRAWS && !quick))
        || scale.is_some_and(|s| s != super::SMI_INIT_SCALE)
        || other_lr
}
