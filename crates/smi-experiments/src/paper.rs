//! The paper's published numbers (docs/algorithms.md §9), for the reports' "Beside the paper"
//! sections: UCI NLL and RMSE on the standard and Gap10 splits (§9.1, §9.2) and MNIST per network
//! depth (§9.3), read from the data files `data/paper_uci.csv` and `data/paper_mnist.csv` (the
//! cells as printed), and the recovery-point medians (§9.4).
//!
//! Each number keeps the precision the paper printed ([`Published::decimals`]): UCI one decimal
//! (so Kin8nm's RMSE "0.1" and Naval's "0.0" say little), MNIST three. Where the paper prints
//! no std (Kin8nm and Naval RMSE) the std is `None`. The UCI numbers are the paper's metrics
//! (docs/algorithms.md §8: RMSE over draws and points jointly, per-particle NLL for
//! SVGD/ASVGD), mean ± std (ddof 0) over splits; MNIST's are mean ± std over predictive draws.
//! The paper gives no numbers for the 1-D wave, only qualitative claims (§9.4 "1-D HDI").

use smi::Method;
use smi_data::{SplitKind, UciDataset};

use crate::wave::common::{Region, Size};

/// A published mean ± std as the paper printed it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    /// The mean.
    pub mean: f64,
    /// The std (ddof 0); `None` where the paper prints the mean alone.
    pub std: Option<f64>,
    /// Decimals the paper printed.
    pub decimals: usize,
}

impl Published {
    /// A cell as printed, `2.6 ± 0.6` or `0.1` (the decimals those of the mean); `None` when it
    /// is not numbers.
    pub fn parse(text: &str) -> Option<Published> {
        let (mean, std) = match text.split_once('±') {
            Some((m, s)) => (m.trim(), Some(s.trim())),
            None => (text.trim(), None),
        };
        Some(Published {
            mean: mean.parse().ok()?,
            std: match std {
                Some(s) => Some(s.parse().ok()?),
                None => None,
            },
            decimals: mean.split_once('.').map_or(0, |(_, f)| f.len()),
        })
    }

    /// As the paper printed it, in this crate's table style: `2.6 ± 0.6`, `-1.3 ± 0.1`, `0.1`.
    pub fn text(&self) -> String {
        let d = self.decimals;
        match self.std {
            Some(s) => format!("{:.d$} ± {s:.d$}", self.mean),
            None => format!("{:.d$}", self.mean),
        }
    }
}

/// The UCI tables' columns, in the paper's order ([`Method::ALL`]'s).
pub const UCI_METHODS: [Method; 6] = Method::ALL;

/// A UCI metric of the paper's Table 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UciMetric {
    /// NLL (the paper's: per-particle for SVGD/ASVGD).
    Nll,
    /// RMSE (the paper's: over draws and points jointly).
    Rmse,
}

/// docs/algorithms.md §9.1 and §9.2, one row per splits × metric × data set, a column per
/// method of [`UCI_METHODS`].
const UCI_CSV: &str = include_str!("../data/paper_uci.csv");
/// docs/algorithms.md §9.3, one row per hidden layers × method, a column per metric of
/// [`MNIST_METRICS`].
const MNIST_CSV: &str = include_str!("../data/paper_mnist.csv");

/// The cell in the column named `column` of the row of the shipped table `csv` whose first
/// cells are `key`; `None` where the table has no such row or column (or, a defect of the
/// shipped file that a test rules out, the cell does not parse).
fn cell(csv: &str, key: &[&str], column: &str) -> Option<Published> {
    let mut rows = csv
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').map(str::trim).collect::<Vec<_>>());
    let header = rows.next()?;
    let col = header.iter().position(|h| *h == column)?;
    rows.find(|r| r.len() == header.len() && r.starts_with(key))
        .and_then(|r| Published::parse(r[col]))
}

/// The paper's number for `dataset` × `method` of `metric` on `kind` splits
/// (docs/algorithms.md §9.1, §9.2); `None` for a method outside [`UCI_METHODS`].
pub fn uci(
    kind: SplitKind,
    metric: UciMetric,
    dataset: UciDataset,
    method: Method,
) -> Option<Published> {
    let metric = match metric {
        UciMetric::Nll => "nll",
        UciMetric::Rmse => "rmse",
    };
    let key = [kind.name(), metric, dataset.short_name()];
    cell(UCI_CSV, &key, method.name())
}

/// The MNIST tables' columns: the record's metric key (`metrics.<key>`, the paper's metrics),
/// in the paper's order Conf, NLL, Acc, Brier, ECE, MCE.
pub const MNIST_METRICS: [&str; 6] = ["conf", "nll", "acc", "brier", "ece", "mce"];

/// The paper's MNIST number for a network of `layers` hidden layers, `method` and the record
/// key `metric` (one of [`MNIST_METRICS`]) (docs/algorithms.md §9.3); `None` for other depths,
/// NUTS or another key.
pub fn mnist(layers: u64, method: Method, metric: &str) -> Option<Published> {
    if !MNIST_METRICS.contains(&metric) {
        return None;
    }
    cell(MNIST_CSV, &[&layers.to_string(), method.name()], metric)
}

/// A published recovery point (docs/algorithms.md §9.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaperRecovery {
    /// The median over the paper's repeats.
    Median(usize),
    /// SVGD ran out of GPU memory before beating SMI: "> cap".
    AboveCap(usize),
}

impl PaperRecovery {
    /// `8` or `>256`, as the recovery tables write them.
    pub fn text(self) -> String {
        match self {
            PaperRecovery::Median(m) => m.to_string(),
            PaperRecovery::AboveCap(c) => format!(">{c}"),
        }
    }
}

/// Repeats behind the paper's recovery medians.
pub const RECOVERY_REPEATS: usize = 10;
/// The largest SVGD particle count the paper reports (where its GPU ran out of memory).
pub const RECOVERY_CAP: usize = 256;

/// The paper's median recovery point of `size` in `region` (docs/algorithms.md §9.4: low
/// 1 / 8 / 8, moderate 1 / >256 / >256 for In / Between / Entire), SVGD scored with the paper's
/// LPPD artifact (no 1/m, docs/algorithms.md §8).
pub fn recovery(size: Size, region: Region) -> PaperRecovery {
    use PaperRecovery::{AboveCap, Median};
    match (size, region) {
        (_, Region::In) => Median(1),
        (Size::Low, _) => Median(8),
        (Size::Moderate, _) => AboveCap(RECOVERY_CAP),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cells of the Markdown table whose header row starts with `header`, in
    /// docs/algorithms.md after the heading `section`: per row, the first cell and the others.
    fn doc_table(section: &str, header: &str) -> Vec<(String, Vec<String>)> {
        let doc = include_str!("../../../docs/algorithms.md");
        let from = doc.find(section).unwrap();
        let start = from + doc[from..].find(header).unwrap();
        doc[start..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let mut cells = l.trim_matches('|').split('|').map(|c| c.trim().to_string());
                let first = cells.next().unwrap();
                (first, cells.collect())
            })
            .collect()
    }

    /// A printed cell in [`Published::text`]'s style: `−` as `-`, ` ± ` spaced, `.9` as `0.9`.
    fn normalised(cell: &str) -> String {
        cell.replace('−', "-")
            .split('±')
            .map(|v| {
                let v = v.trim();
                match v.strip_prefix('.') {
                    Some(rest) => format!("0.{rest}"),
                    None => v.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join(" ± ")
    }

    #[test]
    fn the_data_files_are_the_documents_tables() {
        for (section, kind) in [
            ("### 9.1", SplitKind::Standard),
            ("### 9.2", SplitKind::Gap10),
        ] {
            for (header, metric) in [("| NLL", UciMetric::Nll), ("| RMSE", UciMetric::Rmse)] {
                let rows = doc_table(section, header);
                assert_eq!(rows.len(), 9);
                for (name, cells) in rows {
                    let ds: UciDataset = name.split(' ').next().unwrap().parse().unwrap();
                    for (m, cell) in UCI_METHODS.iter().zip(&cells) {
                        let ours = uci(kind, metric, ds, *m).unwrap().text();
                        assert_eq!(ours, normalised(cell), "{section} {name} {m}");
                    }
                }
            }
        }
        for (header, layers) in [("| 1 hidden", 1), ("| 2 hidden", 2)] {
            let rows = doc_table("### 9.3", header);
            assert_eq!(rows.len(), 5);
            for (name, cells) in rows {
                let m: Method = name.parse().unwrap();
                for (key, cell) in MNIST_METRICS.iter().zip(&cells) {
                    let ours = mnist(layers, m, key).unwrap().text();
                    assert_eq!(ours, normalised(cell), "{layers} {name} {key}");
                }
            }
        }
        let rows = doc_table("**Recovery point R**", "| model size");
        for ((_, cells), size) in rows.iter().zip([Size::Low, Size::Moderate]) {
            for (region, cell) in Region::ALL.iter().zip(cells) {
                assert_eq!(&recovery(size, *region).text(), cell);
            }
        }
    }

    #[test]
    fn lookups_read_the_published_tables() {
        let nll = uci(
            SplitKind::Standard,
            UciMetric::Nll,
            UciDataset::Boston,
            Method::Svgd,
        )
        .unwrap();
        assert_eq!(nll.text(), "7.7 ± 3.5");
        let kin = uci(
            SplitKind::Standard,
            UciMetric::Rmse,
            UciDataset::Kin8nm,
            Method::Smi,
        )
        .unwrap();
        assert_eq!((kin.text(), kin.std), ("0.1".to_string(), None));
        let neg = uci(
            SplitKind::Gap10,
            UciMetric::Nll,
            UciDataset::Naval,
            Method::Nuts,
        );
        assert_eq!(neg.map(|p| p.text()).as_deref(), Some("1094.6 ± 1690.9"));
        // every data set has a row in every table
        for kind in [SplitKind::Standard, SplitKind::Gap10] {
            for metric in [UciMetric::Nll, UciMetric::Rmse] {
                for d in UciDataset::ALL {
                    assert!(uci(kind, metric, d, Method::Map).is_some(), "{d}");
                }
            }
        }
        let acc = mnist(2, Method::Asvgd, "acc").unwrap();
        assert_eq!(acc.text(), "0.936 ± 0.004");
        assert_eq!(mnist(1, Method::Ovi, "ece").unwrap().mean, 0.085);
        assert!(mnist(3, Method::Smi, "acc").is_none());
        assert!(mnist(1, Method::Nuts, "acc").is_none());
        assert_eq!(recovery(Size::Low, Region::Between).text(), "8");
        assert_eq!(recovery(Size::Moderate, Region::Entire).text(), ">256");
        assert_eq!(
            recovery(Size::Moderate, Region::In),
            PaperRecovery::Median(1)
        );
    }
}
