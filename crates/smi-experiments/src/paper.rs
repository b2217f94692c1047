//! The paper's published numbers (docs/algorithms.md §9) as typed constants, for the reports'
//! "Beside the paper" sections: UCI NLL and RMSE on the standard and Gap10 splits (§9.1, §9.2),
//! MNIST per network depth (§9.3) and the recovery-point medians (§9.4).
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
    /// As the paper printed it, in this crate's table style: `2.6 ± 0.6`, `-1.3 ± 0.1`, `0.1`.
    pub fn text(&self) -> String {
        let d = self.decimals;
        match self.std {
            Some(s) => format!("{:.d$} ± {s:.d$}", self.mean),
            None => format!("{:.d$}", self.mean),
        }
    }
}

/// A [`Published`] with a std.
const fn p(mean: f64, std: f64, decimals: usize) -> Published {
    Published {
        mean,
        std: Some(std),
        decimals,
    }
}

/// A [`Published`] mean without a std.
const fn p0(mean: f64, decimals: usize) -> Published {
    Published {
        mean,
        std: None,
        decimals,
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

/// docs/algorithms.md §9.1, NLL (standard splits): per data set, the methods of [`UCI_METHODS`].
#[rustfmt::skip] // one row per line, as in the paper
pub const UCI_STANDARD_NLL: [(UciDataset, [Published; 6]); 9] = [
    (UciDataset::Boston, [p(2.6, 0.6, 1), p(7.7, 3.5, 1), p(2.8, 0.7, 1), p(2.6, 0.1, 1), p(3.0, 0.8, 1), p(2.2, 0.2, 1)]),
    (UciDataset::Concrete, [p(3.4, 0.8, 1), p(3.4, 0.3, 1), p(4.3, 0.7, 1), p(3.2, 0.1, 1), p(3.9, 0.7, 1), p(2.7, 0.3, 1)]),
    (UciDataset::Energy, [p(0.8, 0.7, 1), p(0.8, 0.2, 1), p(27.1, 6.7, 1), p(2.0, 0.0, 1), p(1.3, 0.6, 1), p(0.5, 1.5, 1)]),
    (UciDataset::Kin8nm, [p(-1.3, 0.1, 1), p(-1.2, 0.0, 1), p(-0.1, 0.0, 1), p(-1.1, 0.0, 1), p(-0.5, 0.0, 1), p(-1.4, 0.0, 1)]),
    (UciDataset::Naval, [p(-3.8, 0.4, 1), p(-0.6, 0.0, 1), p(-0.1, 0.0, 1), p(-3.4, 0.0, 1), p(-4.5, 0.1, 1), p(-3.2, 0.4, 1)]),
    (UciDataset::Power, [p(2.9, 0.0, 1), p(2.9, 0.0, 1), p(2.9, 0.0, 1), p(3.0, 0.1, 1), p(2.8, 0.0, 1), p(2.6, 0.1, 1)]),
    (UciDataset::Protein, [p(2.7, 0.0, 1), p(2.8, 0.0, 1), p(3.5, 0.0, 1), p(2.9, 0.0, 1), p(2.8, 0.0, 1), p(2.7, 0.0, 1)]),
    (UciDataset::Wine, [p(1.0, 0.1, 1), p(1.0, 0.1, 1), p(1.1, 0.1, 1), p(1.0, 0.0, 1), p(1.1, 0.2, 1), p(27.0, 18.6, 1)]),
    (UciDataset::Yacht, [p(0.7, 0.2, 1), p(1.9, 1.2, 1), p(0.9, 0.3, 1), p(1.4, 0.1, 1), p(2.2, 2.0, 1), p(-0.4, 0.2, 1)]),
];
/// docs/algorithms.md §9.1, RMSE (standard splits): per data set, the methods of [`UCI_METHODS`].
#[rustfmt::skip] // one row per line, as in the paper
pub const UCI_STANDARD_RMSE: [(UciDataset, [Published; 6]); 9] = [
    (UciDataset::Boston, [p(2.9, 0.7, 1), p(4.1, 1.0, 1), p(3.1, 0.9, 1), p(4.2, 0.7, 1), p(3.0, 0.8, 1), p(3.6, 0.7, 1)]),
    (UciDataset::Concrete, [p(4.8, 0.5, 1), p(5.1, 0.7, 1), p(5.0, 0.5, 1), p(6.8, 0.4, 1), p(4.7, 0.6, 1), p(4.7, 0.6, 1)]),
    (UciDataset::Energy, [p(0.4, 0.1, 1), p(0.5, 0.1, 1), p(1.0, 0.1, 1), p(2.1, 0.1, 1), p(0.4, 0.1, 1), p(0.3, 0.1, 1)]),
    (UciDataset::Kin8nm, [p0(0.1, 1), p0(0.1, 1), p0(0.1, 1), p0(0.1, 1), p0(0.1, 1), p0(0.1, 1)]),
    (UciDataset::Naval, [p0(0.0, 1), p0(0.0, 1), p0(0.0, 1), p0(0.0, 1), p0(0.0, 1), p0(0.0, 1)]),
    (UciDataset::Power, [p(4.2, 0.1, 1), p(4.2, 0.1, 1), p(4.2, 0.1, 1), p(5.3, 0.5, 1), p(4.2, 0.1, 1), p(3.6, 0.2, 1)]),
    (UciDataset::Protein, [p(4.0, 0.1, 1), p(4.2, 0.2, 1), p(4.9, 0.0, 1), p(4.4, 0.0, 1), p(4.1, 0.1, 1), p(3.8, 0.0, 1)]),
    (UciDataset::Wine, [p(0.7, 0.1, 1), p(0.6, 0.0, 1), p(0.6, 0.0, 1), p(0.7, 0.0, 1), p(0.6, 0.0, 1), p(1.0, 0.1, 1)]),
    (UciDataset::Yacht, [p(0.6, 0.2, 1), p(0.7, 0.2, 1), p(0.6, 0.2, 1), p(1.2, 0.2, 1), p(0.8, 0.4, 1), p(0.7, 0.2, 1)]),
];
/// docs/algorithms.md §9.2, NLL (gap10 splits): per data set, the methods of [`UCI_METHODS`].
#[rustfmt::skip] // one row per line, as in the paper
pub const UCI_GAP10_NLL: [(UciDataset, [Published; 6]); 9] = [
    (UciDataset::Boston, [p(5.6, 4.9, 1), p(7.6, 5.1, 1), p(4.1, 3.7, 1), p(2.8, 0.6, 1), p(5.2, 5.3, 1), p(2.4, 0.2, 1)]),
    (UciDataset::Concrete, [p(5.1, 2.7, 1), p(8.4, 4.0, 1), p(8.6, 3.7, 1), p(3.5, 0.3, 1), p(8.6, 5.4, 1), p(3.2, 0.5, 1)]),
    (UciDataset::Energy, [p(12.6, 19.1, 1), p(13.2, 14.3, 1), p(558.8, 803.8, 1), p(2.4, 0.5, 1), p(7.4, 10.5, 1), p(2.1, 3.0, 1)]),
    (UciDataset::Kin8nm, [p(-0.5, 0.0, 1), p(-1.2, 0.1, 1), p(-0.1, 0.0, 1), p(-1.1, 0.1, 1), p(-1.1, 0.1, 1), p(-1.4, 0.1, 1)]),
    (UciDataset::Naval, [p(-3.9, 0.5, 1), p(-0.6, 0.0, 1), p(-0.1, 0.0, 1), p(-3.4, 0.1, 1), p(-4.5, 0.0, 1), p(1094.6, 1690.9, 1)]),
    (UciDataset::Power, [p(2.8, 0.0, 1), p(2.8, 0.0, 1), p(2.8, 0.0, 1), p(3.0, 0.0, 1), p(3.0, 0.1, 1), p(2.8, 0.2, 1)]),
    (UciDataset::Protein, [p(2.9, 0.1, 1), p(3.0, 0.1, 1), p(3.1, 0.4, 1), p(3.0, 0.0, 1), p(2.9, 0.1, 1), p(2.8, 0.1, 1)]),
    (UciDataset::Wine, [p(1.0, 0.1, 1), p(1.0, 0.1, 1), p(1.1, 0.1, 1), p(1.0, 0.0, 1), p(1.2, 0.2, 1), p(62.8, 53.5, 1)]),
    (UciDataset::Yacht, [p(2.0, 1.0, 1), p(194.0, 109.1, 1), p(2.1, 1.2, 1), p(1.5, 0.1, 1), p(78.9, 46.5, 1), p(0.3, 0.5, 1)]),
];
/// docs/algorithms.md §9.2, RMSE (gap10 splits): per data set, the methods of [`UCI_METHODS`].
#[rustfmt::skip] // one row per line, as in the paper
pub const UCI_GAP10_RMSE: [(UciDataset, [Published; 6]); 9] = [
    (UciDataset::Boston, [p(4.9, 1.8, 1), p(4.1, 1.8, 1), p(4.1, 1.8, 1), p(4.7, 1.7, 1), p(4.1, 2.0, 1), p(4.6, 1.4, 1)]),
    (UciDataset::Concrete, [p(8.7, 3.3, 1), p(8.2, 2.0, 1), p(8.1, 1.9, 1), p(8.1, 1.5, 1), p(8.5, 3.0, 1), p(8.7, 3.1, 1)]),
    (UciDataset::Energy, [p(1.3, 1.0, 1), p(1.5, 1.0, 1), p(3.1, 2.6, 1), p(2.9, 0.9, 1), p(1.5, 1.3, 1), p(0.9, 0.5, 1)]),
    (UciDataset::Kin8nm, [p0(0.1, 1), p0(0.1, 1), p0(0.1, 1), p0(0.1, 1), p0(0.1, 1), p0(0.1, 1)]),
    (UciDataset::Naval, [p0(0.0, 1), p0(0.0, 1), p0(0.0, 1), p0(0.0, 1), p0(0.0, 1), p(0.7, 0.7, 1)]),
    (UciDataset::Power, [p(4.1, 0.1, 1), p(4.1, 0.1, 1), p(4.1, 0.1, 1), p(4.7, 0.2, 1), p(4.0, 0.2, 1), p(4.5, 1.3, 1)]),
    (UciDataset::Protein, [p(4.4, 0.2, 1), p(4.5, 0.3, 1), p(4.8, 0.2, 1), p(4.7, 0.2, 1), p(4.5, 0.2, 1), p(4.3, 0.3, 1)]),
    (UciDataset::Wine, [p(0.7, 0.1, 1), p(0.6, 0.0, 1), p(0.7, 0.0, 1), p(0.7, 0.0, 1), p(0.7, 0.1, 1), p(1.2, 0.2, 1)]),
    (UciDataset::Yacht, [p(1.2, 0.6, 1), p(1.2, 0.5, 1), p(1.1, 0.5, 1), p(1.4, 0.2, 1), p(1.3, 0.6, 1), p(1.4, 0.9, 1)]),
];
/// docs/algorithms.md §9.3, 1 hidden layer: per method (the paper's row order), the metrics
/// of [`MNIST_METRICS`] as printed (three decimals, leading zero dropped).
#[rustfmt::skip] // one row per line, as in the paper
pub const MNIST_ONE_LAYER: [(Method, [Published; 6]); 5] = [
    (Method::Smi, [p(0.979, 0.001, 3), p(0.039, 0.003, 3), p(0.957, 0.003, 3), p(0.065, 0.005, 3), p(0.148, 0.012, 3), p(0.631, 0.047, 3)]),
    (Method::Asvgd, [p(0.972, 0.002, 3), p(0.053, 0.004, 3), p(0.949, 0.003, 3), p(0.074, 0.005, 3), p(0.135, 0.007, 3), p(0.634, 0.024, 3)]),
    (Method::Map, [p(0.973, 0.001, 3), p(0.050, 0.002, 3), p(0.952, 0.001, 3), p(0.068, 0.000, 3), p(0.133, 0.000, 3), p(0.574, 0.000, 3)]),
    (Method::Ovi, [p(0.921, 0.006, 3), p(0.158, 0.012, 3), p(0.908, 0.006, 3), p(0.106, 0.007, 3), p(0.085, 0.010, 3), p(0.630, 0.136, 3)]),
    (Method::Svgd, [p(0.972, 0.003, 3), p(0.054, 0.006, 3), p(0.949, 0.004, 3), p(0.074, 0.007, 3), p(0.139, 0.014, 3), p(0.653, 0.048, 3)]),
];
/// docs/algorithms.md §9.3, 2 hidden layers: as [`MNIST_ONE_LAYER`].
#[rustfmt::skip] // one row per line, as in the paper
pub const MNIST_TWO_LAYERS: [(Method, [Published; 6]); 5] = [
    (Method::Smi, [p(0.979, 0.002, 3), p(0.042, 0.005, 3), p(0.956, 0.002, 3), p(0.067, 0.003, 3), p(0.150, 0.014, 3), p(0.653, 0.057, 3)]),
    (Method::Asvgd, [p(0.956, 0.004, 3), p(0.104, 0.011, 3), p(0.936, 0.004, 3), p(0.083, 0.003, 3), p(0.132, 0.011, 3), p(0.651, 0.075, 3)]),
    (Method::Map, [p(0.976, 0.001, 3), p(0.044, 0.003, 3), p(0.955, 0.001, 3), p(0.066, 0.000, 3), p(0.126, 0.000, 3), p(0.614, 0.000, 3)]),
    (Method::Ovi, [p(0.913, 0.005, 3), p(0.182, 0.012, 3), p(0.899, 0.005, 3), p(0.116, 0.005, 3), p(0.084, 0.009, 3), p(0.652, 0.133, 3)]),
    (Method::Svgd, [p(0.960, 0.004, 3), p(0.091, 0.011, 3), p(0.940, 0.002, 3), p(0.081, 0.004, 3), p(0.135, 0.013, 3), p(0.649, 0.044, 3)]),
];

/// The paper's number for `dataset` × `method` of `metric` on `kind` splits
/// (docs/algorithms.md §9.1, §9.2); `None` for a method outside [`UCI_METHODS`].
pub fn uci(
    kind: SplitKind,
    metric: UciMetric,
    dataset: UciDataset,
    method: Method,
) -> Option<Published> {
    let table = match (kind, metric) {
        (SplitKind::Standard, UciMetric::Nll) => &UCI_STANDARD_NLL,
        (SplitKind::Standard, UciMetric::Rmse) => &UCI_STANDARD_RMSE,
        (SplitKind::Gap10, UciMetric::Nll) => &UCI_GAP10_NLL,
        (SplitKind::Gap10, UciMetric::Rmse) => &UCI_GAP10_RMSE,
    };
    let col = UCI_METHODS.iter().position(|&m| m == method)?;
    let (_, row) = table.iter().find(|(d, _)| *d == dataset)?;
    row.get(col).copied()
}

/// The MNIST tables' columns: the record's metric key (`metrics.<key>`, the paper's metrics),
/// in the paper's order Conf, NLL, Acc, Brier, ECE, MCE.
pub const MNIST_METRICS: [&str; 6] = ["conf", "nll", "acc", "brier", "ece", "mce"];

/// The paper's MNIST number for a network of `layers` hidden layers, `method` and the record
/// key `metric` (one of [`MNIST_METRICS`]) (docs/algorithms.md §9.3); `None` for other depths,
/// NUTS or another key.
pub fn mnist(layers: u64, method: Method, metric: &str) -> Option<Published> {
    let table = match layers {
        1 => &MNIST_ONE_LAYER,
        2 => &MNIST_TWO_LAYERS,
        _ => return None,
    };
    let col = MNIST_METRICS.iter().position(|&k| k == metric)?;
    let (_, row) = table.iter().find(|(m, _)| *m == method)?;
    row.get(col).copied()
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
    fn the_constants_are_the_documents_tables() {
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
