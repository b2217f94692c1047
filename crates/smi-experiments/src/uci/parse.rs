//! Parsers of the `smi reproduce uci` list options.

use super::*;

/// Parses a comma-separated list, or `all`.
pub(super) fn parse_list<T: Copy>(
    s: &str,
    all: &[T],
    parse: impl Fn(&str) -> Result<T>,
) -> Result<Vec<T>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(all.to_vec());
    }
    let mut out = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        out.push(parse(p)?);
    }
    if out.is_empty() {
        bail!("empty list {s:?}");
    }
    Ok(out)
}

pub(super) fn parse_datasets(s: &str) -> Result<Vec<UciDataset>> {
    let mut v = parse_list(s, &UciDataset::ALL, |p| {
        p.parse::<UciDataset>()
            .map_err(|e| anyhow!("--datasets: {e}"))
    })?;
    dedup_keep_order(&mut v);
    Ok(v)
}

pub(super) fn parse_methods(s: &str) -> Result<Vec<Method>> {
    let mut v = parse_list(s, &Method::ALL, |p| {
        p.parse::<Method>().context("--methods")
    })?;
    dedup_keep_order(&mut v);
    Ok(v)
}

pub(super) fn dedup_keep_order<T: PartialEq + Copy>(v: &mut Vec<T>) {
    let mut seen: Vec<T> = Vec::new();
    v.retain(|x| {
        if seen.contains(x) {
            false
        } else {
            seen.push(*x);
            true
        }
    });
}

/// Split indices chosen by `--splits`: sorted, disjoint, non-adjacent inclusive ranges (kept as
/// ranges so that `0-4294967295` costs nothing before it is checked against the data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SplitSet(pub(super) Vec<(usize, usize)>);

impl SplitSet {
    /// The largest index.
    pub(super) fn max(&self) -> usize {
        self.0.last().map_or(0, |r| r.1)
    }

    /// The chosen indices below `n`, in order (at most `n` of them).
    pub(super) fn below(&self, n: usize) -> Vec<usize> {
        self.0
            .iter()
            .filter(|(a, _)| *a < n)
            .flat_map(|&(a, b)| a..=b.min(n - 1))
            .collect()
    }

    /// The chosen indices at or above `n`, as text (`20-29, 40`); empty when there are none.
    pub(super) fn at_or_above(&self, n: usize) -> String {
        self.0
            .iter()
            .filter(|(_, b)| *b >= n)
            .map(|&(a, b)| {
                let a = a.max(n);
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `None` means all splits.
pub(super) fn parse_splits(s: &str) -> Result<Option<SplitSet>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    let mut ranges = Vec::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || anyhow!("--splits: {p:?} is not an index, a range a-b or `all`");
        if let Some((a, b)) = p.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            ranges.push((a, b));
        } else {
            let k = p.parse::<usize>().map_err(|_| bad())?;
            ranges.push((k, k));
        }
    }
    if ranges.is_empty() {
        bail!("--splits: empty list {s:?}");
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    Ok(Some(SplitSet(merged)))
}

pub(super) fn parse_kinds(s: &str) -> Result<Vec<SplitKind>> {
    match s.trim().to_ascii_lowercase().as_str() {
        "both" | "all" => Ok(vec![SplitKind::Standard, SplitKind::Gap10]),
        other => Ok(vec![other.parse::<SplitKind>().map_err(|_| {
            anyhow!("--split {s:?}: expected `standard`, `gap10` or `both`")
        })?]),
    }
}

pub(super) fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let bad = || anyhow!("--shard {s:?}: expected I/N with 0 ≤ I < N, e.g. 0/4");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let i: usize = i.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}
