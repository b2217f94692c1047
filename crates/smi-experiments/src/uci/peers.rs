//! The "Beside Deep Ensembles" section of `uci.md`: per data set of the standard splits, our
//! SMI and our best method next to Deep Ensembles (Lakshminarayanan et al. 2017, Table 1), on
//! the metrics that paper reports: the NLL of the predictive mixture and the RMSE of the
//! predictive mean (our proper metrics). The peer's numbers are data, in
//! `data/deep_ensembles_uci.csv`, not code.

use super::report::{digits, Cell};
use super::*;

/// The peer's table as shipped.
const DEEP_ENSEMBLES_CSV: &str = include_str!("../../data/deep_ensembles_uci.csv");

/// One data set's row of the peer's table: (RMSE, ±), (NLL, ±), as printed (two decimals).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct PeerRow {
    pub(super) rmse: (f64, f64),
    pub(super) nll: (f64, f64),
}

/// Deep Ensembles' row for `ds`, if the table has one.
///
/// # Errors
/// A malformed shipped table (a build defect; tested).
pub(super) fn deep_ensembles(ds: UciDataset) -> Result<Option<PeerRow>> {
    for line in DEEP_ENSEMBLES_CSV
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("dataset,"))
    {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let [name, rmse, rmse_pm, nll, nll_pm] = f.as_slice() else {
            bail!("data/deep_ensembles_uci.csv: bad line {line:?}");
        };
        if *name != ds.short_name() {
            continue;
        }
        let num = |s: &str| -> Result<f64> {
            s.parse()
                .with_context(|| format!("data/deep_ensembles_uci.csv: bad number {s:?}"))
        };
        return Ok(Some(PeerRow {
            rmse: (num(rmse)?, num(rmse_pm)?),
            nll: (num(nll)?, num(nll_pm)?),
        }));
    }
    Ok(None)
}

/// The section: one row per data set with standard-split records.
///
/// # Errors
/// A malformed shipped table.
pub(super) fn beside_deep_ensembles(
    cells: &BTreeMap<(String, UciDataset, Method), Cell>,
) -> Result<String> {
    let standard = SplitKind::Standard.name();
    let datasets: BTreeSet<UciDataset> = cells
        .keys()
        .filter(|(k, _, _)| k == standard)
        .map(|(_, ds, _)| *ds)
        .collect();
    if datasets.is_empty() {
        return Ok(String::new());
    }
    let mut rows = Vec::new();
    for ds in datasets {
        // (method, mean, std) of a proper metric (the cell's value index `idx`) per method
        let stats = |idx: usize| -> Vec<(Method, f64, f64)> {
            cells
                .iter()
                .filter(|((k, d, _), _)| k == standard && *d == ds)
                .filter_map(|((_, _, m), c)| c.stats(idx).map(|st| (*m, st.mean, st.std)))
                .collect()
        };
        let text = |mean: f64, std: f64| tables::mean_std(mean, std, digits(mean.abs()));
        let peer = deep_ensembles(ds)?;
        let mut row = vec![ds.to_string()];
        // the proper NLL (the cell's value 1) and RMSE (value 0), each beside the peer's
        for (idx, theirs) in [(1usize, peer.map(|p| p.nll)), (0, peer.map(|p| p.rmse))] {
            let s = stats(idx);
            row.push(
                s.iter()
                    .find(|(m, _, _)| *m == Method::Smi)
                    .map_or("–".to_string(), |&(_, mean, std)| text(mean, std)),
            );
            row.push(
                s.iter()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map_or("–".to_string(), |&(m, mean, std)| {
                        format!("{} ({})", text(mean, std), m.label())
                    }),
            );
            row.push(theirs.map_or("–".to_string(), |(mean, pm)| {
                format!("{mean:.2} ± {pm:.2}")
            }));
        }
        rows.push(row);
    }
    let mut md = String::from("## Beside Deep Ensembles\n\n");
    md.push_str(
        "Standard splits, proper metrics (NLL of the predictive mixture, RMSE of the predictive \
         mean), mean ± std (ddof 0) over our splits, in the configuration of the tables below; \
         \"best\": the method of ours with the lowest mean. Deep Ensembles: Lakshminarayanan, \
         Pritzel and Blundell (2017), Table 1, as printed (20 splits, protein 5); the numbers \
         are in `crates/smi-experiments/data/deep_ensembles_uci.csv`.\n\n",
    );
    md.push_str(&tables::markdown(
        &[
            "dataset",
            "NLL SMI",
            "NLL best (ours)",
            "NLL Deep Ens.",
            "RMSE SMI",
            "RMSE best (ours)",
            "RMSE Deep Ens.",
        ],
        &rows,
    ));
    md.push('\n');
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_table_covers_the_nine_data_sets() {
        for ds in UciDataset::ALL {
            let row = deep_ensembles(ds).unwrap();
            assert!(row.is_some(), "{ds}");
        }
        let naval = deep_ensembles(UciDataset::Naval).unwrap().unwrap();
        assert_eq!(naval.nll, (-5.63, 0.05));
        assert_eq!(
            deep_ensembles(UciDataset::Boston).unwrap().unwrap().rmse,
            (3.28, 1.00)
        );
    }
}
