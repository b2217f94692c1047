//! Markdown table helpers shared by the experiments' reports.

/// A Markdown table from a header and rows of cells.
pub fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    s.push_str(&format!("| {} |\n", header.join(" | ")));
    s.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

/// `mean ± std` with `digits` decimals.
pub fn mean_std(mean: f64, std: f64, digits: usize) -> String {
    format!("{mean:.digits$} ± {std:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_markdown() {
        let t = markdown(&["a", "b"], &[vec!["1".into(), mean_std(0.5, 0.25, 2)]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| 1 | 0.50 ± 0.25 |\n");
    }
}
