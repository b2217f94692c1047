//! The settings the wave records were made with, described from the records themselves (so that
//! `wave.md` and `wave-hdi.png` never claim the paper's budgets for a quick run): steps per
//! method, NUTS warm-up + draws, predictive draws, repeats, quick or paper.

use serde_json::{Map, Value};

use super::common::{default_nuts, default_steps, Method, Size, PREDICTIVE_DRAWS};
use crate::plot::thousands;
use crate::records;

/// The distinct values of `f` over `recs`, in first-seen order, joined by " / ".
fn distinct(
    recs: &[&Map<String, Value>],
    f: impl Fn(&Map<String, Value>) -> Option<String>,
) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in recs.iter().filter_map(|r| f(r)) {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join(" / ")
}

/// An unsigned number of a record as a grouped count.
fn count(r: &Map<String, Value>, key: &str) -> Option<String> {
    records::num(r, key).map(|v| thousands(v.max(0.0) as u64))
}

/// NUTS's "warm-up + draws (depth d)" of a record.
fn nuts_budget(r: &Map<String, Value>) -> Option<String> {
    Some(format!(
        "{} + {} (depth {})",
        count(r, "config.engine.num_warmup")?,
        count(r, "config.engine.num_draws")?,
        count(r, "config.engine.max_depth")?
    ))
}

/// Whether a record used the paper's budgets (steps, NUTS, predictive draws).
fn is_paper(r: &Map<String, Value>) -> bool {
    let (Some(method), Some(size)) = (
        records::text(r, "method").and_then(|m| m.parse::<Method>().ok()),
        records::text(r, "size").and_then(Size::from_name),
    ) else {
        return false;
    };
    let draws_ok = records::num(r, "config.predictive_draws") == Some(PREDICTIVE_DRAWS as f64);
    let budget_ok = if method == Method::Nuts {
        let n = default_nuts(size);
        records::num(r, "config.engine.num_warmup") == Some(n.num_warmup as f64)
            && records::num(r, "config.engine.num_draws") == Some(n.num_draws as f64)
    } else {
        records::num(r, "steps") == Some(default_steps(method) as f64)
    };
    draws_ok && budget_ok
}

/// "quick run (--quick)", "paper settings" (every record passes `paper`) or "custom settings".
fn kind(recs: &[&Map<String, Value>], paper: impl Fn(&Map<String, Value>) -> bool) -> &'static str {
    let quick = |r: &&Map<String, Value>| records::get(r, "quick").and_then(Value::as_bool);
    if recs.iter().all(|r| quick(r) == Some(true)) {
        "quick run (--quick)"
    } else if recs.iter().all(|r| paper(r)) {
        "paper settings"
    } else {
        "custom settings"
    }
}

/// The number of repeats the records cover (the largest repeat index + 1), with its noun.
fn repeats(recs: &[&Map<String, Value>]) -> String {
    let n = recs
        .iter()
        .filter_map(|r| records::num(r, "repeat"))
        .map(|v| v.max(0.0) as u64 + 1)
        .max()
        .unwrap_or(0);
    format!("{n} repeat{}", if n == 1 { "" } else { "s" })
}

/// The budget of every method present: steps, or NUTS's warm-up + draws.
fn budgets(recs: &[&Map<String, Value>]) -> Vec<String> {
    Method::ALL
        .iter()
        .filter_map(|&m| {
            let of: Vec<&Map<String, Value>> = recs
                .iter()
                .copied()
                .filter(|r| records::text(r, "method") == Some(m.name()))
                .collect();
            if of.is_empty() {
                return None;
            }
            let b = if m == Method::Nuts {
                distinct(&of, nuts_budget)
            } else {
                distinct(&of, |r| count(r, "steps"))
            };
            Some(format!("{} {b}", m.label()))
        })
        .collect()
}

/// One line for the figure and the table's head: kind of run, steps per method (NUTS: warm-up
/// + draws), predictive draws, repeats.
pub(super) fn settings_line(recs: &[&Map<String, Value>]) -> String {
    let draws = distinct(recs, |r| count(r, "config.predictive_draws"));
    format!(
        "Settings: {}; steps {}; S = {draws} predictive draws; {}.",
        kind(recs, is_paper),
        budgets(recs).join(", "),
        repeats(recs)
    )
}

/// The settings line of `recovery.md`: steps, SMI's predictive draws, the SVGD particle cap.
pub(super) fn recovery_line(recs: &[&Map<String, Value>]) -> String {
    let paper = |r: &Map<String, Value>| {
        records::num(r, "steps") == Some(default_steps(Method::Smi) as f64)
            && records::num(r, "config.smi_predictive_draws") == Some(PREDICTIVE_DRAWS as f64)
            && records::num(r, "max_particles") == Some(256.0)
    };
    format!(
        "Settings: {}; {} steps for SMI and every SVGD fit (paper: {}); S = {} predictive draws \
         of SMI (paper: {}); SVGD m up to {} (paper: 256); {}.",
        kind(recs, paper),
        distinct(recs, |r| count(r, "steps")),
        thousands(default_steps(Method::Smi)),
        distinct(recs, |r| count(r, "config.smi_predictive_draws")),
        thousands(PREDICTIVE_DRAWS as u64),
        distinct(recs, |r| count(r, "max_particles")),
        repeats(recs)
    )
}

/// The paper's budgets, for comparison in `wave.md`.
pub(super) fn paper_budgets() -> String {
    let low = default_nuts(Size::Low);
    let moderate = default_nuts(Size::Moderate);
    format!(
        "paper: {} steps for SMI/SVGD/ASVGD, {} for OVI and MAP, S = {} predictive draws, NUTS \
         {} + {} at max tree depth {} (low) and {} + {} at depth {} (moderate), 10 repeats",
        thousands(default_steps(Method::Smi)),
        thousands(default_steps(Method::Map)),
        thousands(PREDICTIVE_DRAWS as u64),
        low.num_warmup,
        low.num_draws,
        low.max_depth,
        moderate.num_warmup,
        moderate.num_draws,
        moderate.max_depth
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(method: &str, steps: u64, draws: u64, quick: bool) -> Map<String, Value> {
        let Value::Object(m) = json!({
            "method": method, "size": "low", "repeat": 0, "steps": steps, "quick": quick,
            "config": {
                "predictive_draws": draws,
                "engine": {"num_warmup": 50, "num_draws": 50, "max_depth": 8},
            },
        }) else {
            unreachable!("an object literal")
        };
        m
    }

    #[test]
    fn a_quick_run_is_described_with_its_own_budgets() {
        let recs = [
            record("smi", 300, 200, true),
            record("nuts", 100, 200, true),
        ];
        let refs: Vec<&Map<String, Value>> = recs.iter().collect();
        let line = settings_line(&refs);
        assert!(line.contains("quick run (--quick)"), "{line}");
        assert!(
            line.contains("SMI 300") && line.contains("NUTS 50 + 50 (depth 8)"),
            "{line}"
        );
        assert!(line.contains("S = 200 predictive draws") && line.contains("1 repeat."));
        assert!(!line.contains("5 000"), "{line}");
        assert!(paper_budgets().contains("S = 5 000"));
    }

    #[test]
    fn paper_budgets_are_recognised() {
        let r = record("smi", 15_000, 5_000, false);
        assert!(settings_line(&[&r]).contains("paper settings"));
        let r = record("smi", 15_000, 200, false);
        assert!(settings_line(&[&r]).contains("custom settings"));
    }
}
