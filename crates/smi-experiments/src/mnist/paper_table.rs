//! The "Beside the paper" section of `mnist.md`: per network depth and method of the records,
//! our accuracy, NLL and ECE (the paper's metrics) next to the paper's published numbers
//! (docs/algorithms.md §9.3), with the epochs behind ours and their CPU hours.

use super::report::{cell, samples};
use super::*;
use crate::cpu_time::{CpuTotal, CPU_HOURS_NOTE};
use crate::paper;

/// The metrics compared: record key (`metrics.<key>`, the paper's metric) and label.
const COMPARED: [(&str, &str); 3] = [("acc", "Acc↑"), ("nll", "NLL↓"), ("ece", "ECE↓")];

/// The section (a heading, a caption and one table per depth with records); `longest` holds
/// the record shown for each (layers, method): its longest run, the closest to the paper's
/// 100 epochs.
pub(super) fn beside_the_paper(longest: &BTreeMap<(u64, Method), &Map<String, Value>>) -> String {
    let mut md = String::from("## Beside the paper\n\n");
    md.push_str(&format!(
        "Ours: the paper's metrics of the tables above (Acc with labels sampled from each \
         draw's predictive; NLL; the unweighted 100-bin ECE with the paper's empty-bin rule, \
         docs/algorithms.md §8), mean ± std (ddof 0) over our predictive draws, after `epochs` \
         epochs. Paper: docs/algorithms.md §9.3, 100 epochs, 50 draws, printed with three \
         decimals. The CPU time is the training's (CPU seconds per step × steps; evaluation \
         excluded). {CPU_HOURS_NOTE}\n\n"
    ));
    let layers: BTreeSet<u64> = longest.keys().map(|(l, _)| *l).collect();
    let mut header = vec!["method", "epochs"];
    for (_, label) in COMPARED {
        header.extend([label, "paper"]);
    }
    header.push("CPU h");
    for l in layers {
        let rows: Vec<Vec<String>> = TABLE
            .iter()
            .filter_map(|&m| longest.get(&(l, m)).map(|r| row(l, m, r)))
            .collect();
        let noun = if l == 1 { "layer" } else { "layers" };
        md.push_str(&format!("### {l} hidden {noun}\n\n"));
        md.push_str(&tables::markdown(&header, &rows));
        md.push('\n');
    }
    md
}

/// One row: method, epochs, ours and the paper's per compared metric, CPU hours.
fn row(layers: u64, m: Method, r: &Map<String, Value>) -> Vec<String> {
    let dash = || "–".to_string();
    let mut row = vec![
        m.label().to_string(),
        records::get(r, "epochs")
            .and_then(Value::as_u64)
            .map_or_else(dash, |e| e.to_string()),
    ];
    for (key, _) in COMPARED {
        row.push(MeanStd::of(&samples(r, key)).map_or_else(|_| dash(), cell));
        row.push(paper::mnist(layers, m, key).map_or_else(dash, |p| {
            cell(MeanStd {
                mean: p.mean,
                std: p.std.unwrap_or(f64::NAN),
            })
        }));
    }
    let cpu = records::num(r, "metrics.cpu_seconds_per_step")
        .zip(records::num(r, "steps"))
        .map(|(per_step, steps)| per_step * steps);
    row.push(CpuTotal::of([cpu]).hours_cell());
    row
}
