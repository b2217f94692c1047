//! The learning rates of the UCI units: the paper's chosen rates (docs/algorithms.md §9.4) and
//! the `--lr paper|tune|VALUE` choice.

use super::*;

/// The paper's chosen learning rates (docs/algorithms.md §9.4): exponents a of 5·10^−a in the order
/// ASVGD, MAP, OVI, SMI, SVGD.
fn paper_lr_codes(dataset: UciDataset, kind: SplitKind) -> [i32; 5] {
    use UciDataset::*;
    match (kind, dataset) {
        (SplitKind::Standard, Boston) => [5, 5, 5, 5, 6],
        (SplitKind::Standard, Concrete) => [4, 4, 3, 4, 2],
        (SplitKind::Standard, Energy) => [4, 4, 3, 4, 4],
        (SplitKind::Standard, Kin8nm) => [5, 5, 4, 3, 4],
        (SplitKind::Standard, Naval) => [5, 4, 4, 4, 5],
        (SplitKind::Standard, Power) => [4, 4, 3, 4, 4],
        (SplitKind::Standard, Protein) => [5, 3, 3, 3, 3],
        (SplitKind::Standard, Wine) => [5, 5, 3, 3, 5],
        (SplitKind::Standard, Yacht) => [5, 5, 3, 3, 5],
        (SplitKind::Gap10, Boston) => [5, 5, 5, 3, 2],
        (SplitKind::Gap10, Concrete) => [4, 4, 3, 4, 3],
        (SplitKind::Gap10, Energy) => [4, 2, 2, 4, 4],
        (SplitKind::Gap10, Kin8nm) => [5, 4, 3, 5, 4],
        (SplitKind::Gap10, Naval) => [5, 4, 4, 4, 5],
        (SplitKind::Gap10, Power) => [4, 5, 2, 4, 4],
        (SplitKind::Gap10, Protein) => [4, 3, 3, 4, 3],
        (SplitKind::Gap10, Wine) => [5, 5, 4, 2, 5],
        (SplitKind::Gap10, Yacht) => [5, 3, 3, 3, 4],
    }
}

/// The paper's learning rate for `method` (`None` for NUTS, which has none).
pub fn paper_lr(dataset: UciDataset, kind: SplitKind, method: Method) -> Option<f64> {
    let c = paper_lr_codes(dataset, kind);
    let a = match method {
        Method::Asvgd => c[0],
        Method::Map => c[1],
        Method::Ovi => c[2],
        Method::Smi => c[3],
        Method::Svgd => c[4],
        Method::Nuts => return None,
    };
    // Parsed from text so that the value (and the config string) is exactly 5e-a.
    format!("5e-{a}").parse().ok()
}

/// How the learning rate is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum LrMode {
    Paper,
    Tune,
    Fixed(f64),
}

impl FromStr for LrMode {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "paper" => Ok(LrMode::Paper),
            "tune" => Ok(LrMode::Tune),
            other => {
                let v: f64 = other.parse().map_err(|_| {
                    anyhow!("--lr {s:?}: expected `paper`, `tune` or a positive number")
                })?;
                if !(v > 0.0 && v.is_finite()) {
                    bail!("--lr {s:?}: the learning rate must be positive and finite");
                }
                Ok(LrMode::Fixed(v))
            }
        }
    }
}
