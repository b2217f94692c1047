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

/// `None` means all splits.
pub(super) fn parse_splits(s: &str) -> Result<Option<Vec<usize>>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    let mut out = BTreeSet::new();
    for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || anyhow!("--splits: {p:?} is not an index, a range a-b or `all`");
        if let Some((a, b)) = p.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            out.extend(a..=b);
        } else {
            out.insert(p.parse::<usize>().map_err(|_| bad())?);
        }
    }
    if out.is_empty() {
        bail!("--splits: empty list {s:?}");
    }
    Ok(Some(out.into_iter().collect()))
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
