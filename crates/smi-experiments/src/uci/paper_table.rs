//! The "Beside the paper" section of `uci.md`: per split kind, data set and method of the
//! records, our NLL and RMSE (the paper's metrics) next to the paper's published numbers
//! (docs/algorithms.md §9.1, §9.2), with the splits behind ours and their CPU hours.

use super::report::{digits, kind_title, Cell};
use super::*;
use crate::cpu_time::{CpuTotal, CPU_HOURS_NOTE};
use crate::paper::{self, UciMetric};

/// The section (a heading, a caption and one table per split kind with records).
pub(super) fn beside_the_paper(cells: &BTreeMap<(String, UciDataset, Method), Cell>) -> String {
    let mut md = String::from("## Beside the paper\n\n");
    md.push_str(&format!(
        "Ours: the paper's metrics (docs/algorithms.md §8: RMSE over draws and points jointly; \
         NLL per particle for SVGD/ASVGD, of the mixture for the others), mean ± std (ddof 0) \
         over our `n` splits, in the configuration of the tables below. Paper: \
         docs/algorithms.md §9.1 (standard) and §9.2 (Gap10), the same metrics over 20 splits \
         (protein 5), as printed: one decimal, and no std for Kin8nm and Naval RMSE (\"0.1\", \
         \"0.0\"). {CPU_HOURS_NOTE}\n\n"
    ));
    for kind in [SplitKind::Standard, SplitKind::Gap10] {
        let rows: Vec<Vec<String>> = cells
            .iter()
            .filter(|((k, _, _), _)| k == kind.name())
            .map(|((_, ds, m), c)| row(kind, *ds, *m, c))
            .collect();
        if rows.is_empty() {
            continue;
        }
        md.push_str(&format!("### {} splits\n\n", kind_title(kind.name())));
        md.push_str(&tables::markdown(
            &[
                "dataset",
                "method",
                "n",
                "NLL ours",
                "NLL paper",
                "RMSE ours",
                "RMSE paper",
                "CPU h",
            ],
            &rows,
        ));
        md.push('\n');
    }
    md
}

/// One row: data set, method, splits, then ours and the paper's per metric, then CPU hours.
fn row(kind: SplitKind, ds: UciDataset, m: Method, c: &Cell) -> Vec<String> {
    let mut row = vec![
        ds.to_string(),
        m.label().to_string(),
        c.splits.len().to_string(),
    ];
    // the cell's value indices of the paper's NLL and RMSE (see `Cell`)
    for (metric, idx) in [(UciMetric::Nll, 3), (UciMetric::Rmse, 2)] {
        row.push(c.stats(idx).map_or("–".to_string(), |st| {
            tables::mean_std(st.mean, st.std, digits(st.mean.abs()))
        }));
        row.push(paper::uci(kind, metric, ds, m).map_or("–".to_string(), |p| p.text()));
    }
    row.push(CpuTotal::of(c.splits.values().map(|s| Some(s[5]))).hours_cell());
    row
}
