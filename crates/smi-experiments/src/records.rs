//! Experiment records: one JSON object per line in `<out>/<experiment>.jsonl`.
//!
//! Every record carries `experiment`, `method`, `seed`, its setting, `metrics`, `steps`,
//! `seconds`, `config`, `version` and `commit` (the git commit of the program). A unit that did
//! not produce finite metrics is recorded as failed (`"status": "failed"` and a `reason`, see
//! [`fail_if_non_finite`]): such a record does not mark its unit as done, and reports read only
//! [`read_succeeded`].
//!
//! Appending takes an exclusive lock on the records file (so that concurrent runs sharing an
//! output folder never interleave their lines) and writes one whole line with a single `write`
//! call, so an interrupted run never corrupts earlier records. A torn last line (a write cut
//! short by a crash or power loss) is skipped with a warning when reading; the next append moves
//! its bytes to `<experiment>.jsonl.torn` and cuts it off before writing, so that the new record
//! starts on a line of its own.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Map, Value};

/// The program version written into every record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit the program was built from, written into every record (`commit`): the full
/// hash, with `+dirty` when the Rust sources differed from it, or `unknown` when built outside a
/// git checkout. Not part of a unit's identity: a rebuilt program resumes the same records.
pub const COMMIT: &str = env!("SMI_GIT_COMMIT");

/// "`VERSION` (commit `COMMIT`)", what `smi --version` prints.
pub const VERSION_AND_COMMIT: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SMI_GIT_COMMIT"),
    ")"
);

/// The `status` of a record whose unit failed (its `reason` says why).
pub const FAILED: &str = "failed";

/// The records file of `experiment` in `out`.
pub fn path(out: &Path, experiment: &str) -> PathBuf {
    out.join(format!("{experiment}.jsonl"))
}

/// Where torn last lines of `<out>/<experiment>.jsonl` are moved (`<experiment>.jsonl.torn`).
pub fn torn_path(out: &Path, experiment: &str) -> PathBuf {
    out.join(format!("{experiment}.jsonl.torn"))
}

/// Appends `record` (a JSON object) to `<out>/<experiment>.jsonl`, adding `experiment`,
/// `version` and `commit` ([`COMMIT`]) when missing.
///
/// The file is locked exclusively while appending (other appends wait). A last line without its
/// newline (an interrupted earlier write) is first moved to `<experiment>.jsonl.torn` (appended
/// there, one fragment per line) and cut off, with a warning on stderr; a last line that is a
/// whole record and lacks only the newline gets its newline instead.
pub fn append(out: &Path, experiment: &str, mut record: Map<String, Value>) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    record
        .entry("experiment")
        .or_insert_with(|| Value::from(experiment));
    record
        .entry("version")
        .or_insert_with(|| Value::from(VERSION));
    record
        .entry("commit")
        .or_insert_with(|| Value::from(COMMIT));
    let mut line = serde_json::to_string(&Value::Object(record))?;
    line.push('\n');
    let p = path(out, experiment);
    let mut f = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(&p)
        .with_context(|| format!("cannot open {}", p.display()))?;
    match f.lock() {
        Err(e) if !crate::locks::unsupported(&e, &p) => {
            return Err(e).with_context(|| format!("cannot lock {}", p.display()));
        }
        _ => {}
    }
    repair_tail(&mut f, &p, &torn_path(out, experiment))
        .with_context(|| format!("cannot repair the torn last line of {}", p.display()))?;
    f.write_all(line.as_bytes())
        .with_context(|| format!("cannot append to {}", p.display()))?;
    // The lock is released when `f` is closed.
    Ok(())
}

/// Ends the (locked, append-mode) records file `f` at a line boundary: a last line without its
/// newline is completed when it is a whole JSON object, otherwise moved to `torn` and cut off.
fn repair_tail(f: &mut File, p: &Path, torn: &Path) -> Result<()> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1))?;
    f.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    let start = last_line_start(f, len)?;
    let mut tail = vec![0u8; usize::try_from(len - start)?];
    f.seek(SeekFrom::Start(start))?;
    f.read_exact(&mut tail)?;
    if parse_line(&tail).is_some() {
        // A whole record that lacks only its newline (e.g. an editor dropped it): keep it.
        f.write_all(b"\n")?;
        eprintln!(
            "note: {}: the last record had no newline; added it",
            p.display()
        );
        return Ok(());
    }
    let mut t = OpenOptions::new()
        .create(true)
        .append(true)
        .open(torn)
        .with_context(|| format!("cannot open {}", torn.display()))?;
    tail.push(b'\n');
    t.write_all(&tail)
        .with_context(|| format!("cannot append to {}", torn.display()))?;
    t.sync_all()?;
    f.set_len(start)?;
    eprintln!(
        "warning: {}: its last line was torn ({} bytes without a newline: an interrupted \
         write); moved them to {} and cut them off",
        p.display(),
        tail.len() - 1,
        torn.display()
    );
    Ok(())
}

/// The offset just after the last newline before `len` (0 when there is none).
fn last_line_start(f: &mut File, len: u64) -> Result<u64> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    let mut buf = Vec::new();
    while end > 0 {
        let begin = end.saturating_sub(CHUNK);
        buf.resize(usize::try_from(end - begin)?, 0);
        f.seek(SeekFrom::Start(begin))?;
        f.read_exact(&mut buf)?;
        if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
            return Ok(begin + i as u64 + 1);
        }
        end = begin;
    }
    Ok(0)
}

/// A line's record: a JSON object in UTF-8 (surrounding whitespace allowed).
fn parse_line(line: &[u8]) -> Option<Map<String, Value>> {
    let text = std::str::from_utf8(line).ok()?;
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Reads every record of `<out>/<experiment>.jsonl` (none if the file is missing), failed ones
/// included. Unreadable lines are skipped with a warning; a torn last line (no newline: an
/// interrupted write) is skipped with a warning naming it as such.
pub fn read(out: &Path, experiment: &str) -> Result<Vec<Map<String, Value>>> {
    let p = path(out, experiment);
    let mut f = match File::open(&p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", p.display())),
    };
    // Waits for an append in progress, so that its line is read whole.
    match f.lock_shared() {
        Err(e) if !crate::locks::unsupported(&e, &p) => {
            return Err(e).with_context(|| format!("cannot lock {}", p.display()));
        }
        _ => {}
    }
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", p.display()))?;
    drop(f);
    let mut recs = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(line) {
            Some(m) => recs.push(m),
            None if i + 1 == lines.len() => eprintln!(
                "warning: {}:{}: skipping a torn last line ({} bytes without a newline: an \
                 interrupted write; the next append moves it to {})",
                p.display(),
                i + 1,
                line.len(),
                torn_path(out, experiment).display()
            ),
            None => eprintln!(
                "warning: {}:{}: skipping an unreadable record",
                p.display(),
                i + 1
            ),
        }
    }
    Ok(recs)
}

/// The records of `<out>/<experiment>.jsonl` that are not marked failed (see [`is_failed`]).
pub fn read_succeeded(out: &Path, experiment: &str) -> Result<Vec<Map<String, Value>>> {
    let mut recs = read(out, experiment)?;
    recs.retain(|r| !is_failed(r));
    Ok(recs)
}

/// The records among `recs` that hold every field of `identity` with an equal value: how an
/// experiment without a config string finds the units a rerun can skip. `identity` goes
/// through the same JSON text round trip as a stored record first, so that floating-point
/// settings compare as they were written.
pub fn matching<'a>(
    recs: &'a [Map<String, Value>],
    identity: &Map<String, Value>,
) -> Vec<&'a Map<String, Value>> {
    let identity: Map<String, Value> = serde_json::to_string(identity)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| identity.clone());
    recs.iter()
        .filter(|r| identity.iter().all(|(k, v)| r.get(k) == Some(v)))
        .collect()
}

/// Whether `record` is marked failed (`"status": "failed"`).
pub fn is_failed(record: &Map<String, Value>) -> bool {
    text(record, "status") == Some(FAILED)
}

/// Marks `record` failed: `"status": "failed"` and `"reason": reason`.
pub fn mark_failed(record: &mut Map<String, Value>, reason: &str) {
    record.insert("status".into(), Value::from(FAILED));
    record.insert("reason".into(), Value::from(reason));
}

/// The dotted keys of the values under `metrics` that are not finite numbers. JSON has no NaN
/// or infinity: serde_json writes them as `null`, so a `null` counts as not finite. Arrays are
/// named once (`metrics.per_draw.nll`), not per element.
pub fn non_finite_metrics(record: &Map<String, Value>) -> Vec<String> {
    fn walk(v: &Value, key: &str, out: &mut Vec<String>) {
        match v {
            Value::Null => out.push(key.to_string()),
            Value::Number(n) => {
                if !n.as_f64().is_some_and(f64::is_finite) {
                    out.push(key.to_string());
                }
            }
            Value::Object(m) => {
                for (k, v) in m {
                    walk(v, &format!("{key}.{k}"), out);
                }
            }
            Value::Array(a) => {
                let mut inner = Vec::new();
                for v in a {
                    walk(v, key, &mut inner);
                }
                if !inner.is_empty() {
                    out.push(key.to_string());
                }
            }
            Value::Bool(_) | Value::String(_) => {}
        }
    }
    let mut out = Vec::new();
    if let Some(m) = record.get("metrics") {
        walk(m, "metrics", &mut out);
    }
    out
}

/// Marks `record` failed when some value under `metrics` is not a finite number (see
/// [`non_finite_metrics`]); returns the reason then.
pub fn fail_if_non_finite(record: &mut Map<String, Value>) -> Option<String> {
    let bad = non_finite_metrics(record);
    if bad.is_empty() {
        return None;
    }
    let reason = format!(
        "non-finite metrics (NaN or infinite, written as null): {}",
        bad.join(", ")
    );
    mark_failed(record, &reason);
    Some(reason)
}

/// `record[key]` as f64 (dotted keys reach into objects: `"metrics.rmse"`).
pub fn num(record: &Map<String, Value>, key: &str) -> Option<f64> {
    get(record, key).and_then(Value::as_f64)
}

/// `record[key]` as a string (dotted keys reach into objects).
pub fn text<'a>(record: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    get(record, key).and_then(Value::as_str)
}

/// `record[key]` (dotted keys reach into objects).
pub fn get<'a>(record: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    let mut parts = key.split('.');
    let mut v = record.get(parts.next()?)?;
    for p in parts {
        v = v.get(p)?;
    }
    Some(v)
}

/// What a config string gains for SMI's attraction normalisation: nothing for the paper's
/// (the default), `{sep}attraction=numpyro` otherwise. Config strings are resume keys, so the
/// default must leave them unchanged.
pub fn attraction_suffix(norm: smi::AttractionNorm, sep: &str) -> String {
    match norm {
        smi::AttractionNorm::Paper => String::new(),
        smi::AttractionNorm::Numpyro => format!("{sep}attraction=numpyro"),
    }
}

/// What a config string gains for a reproduced NumPyro defect (docs/algorithms.md §2.8): nothing
/// without one (the default), `{sep}defect=<name>` with one. Config strings are resume keys, so
/// the default must leave them unchanged.
pub fn defect_suffix(defect: Option<smi::NumpyroDefect>, sep: &str) -> String {
    defect.map_or_else(String::new, |d| format!("{sep}defect={}", d.name()))
}

/// What a config string gains for a setting changed from its default: nothing at the default,
/// `{sep}{name}={value}` otherwise. Config strings are resume keys, so the default must leave
/// them unchanged.
pub fn changed<T: PartialEq + std::fmt::Display>(
    sep: &str,
    name: &str,
    value: T,
    default: T,
) -> String {
    if value == default {
        String::new()
    } else {
        format!("{sep}{name}={value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        let Value::Object(m) = v else { unreachable!() };
        m
    }

    #[test]
    fn matching_compares_identity_fields_after_a_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let a = json!({"method": "smi", "repeat": 0, "config": {"lr": 0.1 + 0.2, "steps": 10}});
        let b = json!({"method": "smi", "repeat": 1, "config": {"lr": 0.3, "steps": 10}});
        for r in [&a, &b] {
            let mut rec = obj(r.clone());
            rec.insert("metrics".into(), json!({"lppd": 1.0}));
            append(dir.path(), "demo", rec).unwrap();
        }
        let recs = read(dir.path(), "demo").unwrap();
        // 0.1 + 0.2 ≠ 0.3 in binary: only the first record matches `a`, only the second `b`.
        let hits = matching(&recs, &obj(a));
        assert_eq!(hits.len(), 1);
        assert_eq!(num(hits[0], "repeat"), Some(0.0));
        assert_eq!(matching(&recs, &obj(b)).len(), 1);
        let other = json!({"method": "smi", "repeat": 0, "config": {"lr": 0.3, "steps": 11}});
        assert!(matching(&recs, &obj(other)).is_empty());
    }

    #[test]
    fn append_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3 {
            append(
                dir.path(),
                "demo",
                obj(json!({"method": "smi", "metrics": {"x": i}})),
            )
            .unwrap();
        }
        // A torn last line is skipped.
        let p = path(dir.path(), "demo");
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"method\": \"sm").unwrap();
        let recs = read(dir.path(), "demo").unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(num(&recs[2], "metrics.x"), Some(2.0));
        assert_eq!(text(&recs[0], "experiment"), Some("demo"));
        assert_eq!(text(&recs[0], "commit"), Some(COMMIT));
        // a full hash (optionally marked dirty), or "unknown" outside a git checkout
        let hash = COMMIT.strip_suffix("+dirty").unwrap_or(COMMIT);
        assert!(
            COMMIT == "unknown"
                || (hash.len() == 40 && hash.bytes().all(|b| b.is_ascii_hexdigit())),
            "{COMMIT}"
        );
        assert!(read(dir.path(), "none").unwrap().is_empty());
    }

    #[test]
    fn a_torn_last_line_is_moved_aside_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        for i in 0..3 {
            append(out, "demo", obj(json!({"method": "smi", "i": i}))).unwrap();
        }
        // Cut the last record mid-line, as a crash during its write would.
        let p = path(out, "demo");
        let bytes = std::fs::read(&p).unwrap();
        let cut = bytes.len() - 10;
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let fragment_start = bytes[..cut - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        assert_eq!(read(out, "demo").unwrap().len(), 2);

        append(out, "demo", obj(json!({"method": "svgd", "i": 3}))).unwrap();
        let recs = read(out, "demo").unwrap();
        let is: Vec<f64> = recs.iter().filter_map(|r| num(r, "i")).collect();
        assert_eq!(is, [0.0, 1.0, 3.0], "the new record must not be glued on");
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.ends_with('\n') && text.lines().count() == 3, "{text}");
        let mut torn = bytes[fragment_start..cut].to_vec();
        torn.push(b'\n');
        assert_eq!(std::fs::read(torn_path(out, "demo")).unwrap(), torn);

        // A second torn line is appended to the .torn file.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"a\":").unwrap();
        drop(f);
        append(out, "demo", obj(json!({"i": 4}))).unwrap();
        assert_eq!(read(out, "demo").unwrap().len(), 4);
        let t = std::fs::read_to_string(torn_path(out, "demo")).unwrap();
        assert_eq!(t.lines().count(), 2);
        assert!(t.ends_with("{\"a\":\n"), "{t}");
    }

    #[test]
    fn a_torn_line_cut_inside_a_character_is_skipped_when_reading() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        append(out, "demo", obj(json!({"label": "α"}))).unwrap();
        let p = path(out, "demo");
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        // The first byte of the two-byte "α": not valid UTF-8.
        f.write_all(&"{\"label\": \"α".as_bytes()[..12]).unwrap();
        drop(f);
        let recs = read(out, "demo").unwrap();
        assert_eq!(recs.len(), 1);
        append(out, "demo", obj(json!({"label": "β"}))).unwrap();
        let recs = read(out, "demo").unwrap();
        assert_eq!(text(&recs[1], "label"), Some("β"));
    }

    #[test]
    fn a_whole_last_record_without_newline_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        std::fs::write(path(out, "demo"), "{\"i\":0}\n{\"i\":1}").unwrap();
        append(out, "demo", obj(json!({"i": 2}))).unwrap();
        assert_eq!(read(out, "demo").unwrap().len(), 3);
        assert!(!torn_path(out, "demo").exists());
    }

    #[test]
    fn concurrent_appends_keep_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let big = "x".repeat(100_000);
        std::thread::scope(|s| {
            for t in 0..4 {
                let big = &big;
                s.spawn(move || {
                    for i in 0..20 {
                        append(out, "demo", obj(json!({"t": t, "i": i, "pad": big}))).unwrap();
                    }
                });
            }
        });
        let recs = read(out, "demo").unwrap();
        assert_eq!(recs.len(), 80);
    }

    #[test]
    fn non_finite_metrics_mark_a_record_failed() {
        let mut ok = obj(json!({"metrics": {"rmse": 1.0, "per_draw": {"nll": [1.0, 2.0]}}}));
        assert_eq!(fail_if_non_finite(&mut ok), None);
        assert!(!is_failed(&ok));
        let mut bad = obj(json!({"metrics": {
            "rmse": f64::NAN, "nll": 1.0, "per_draw": {"nll": [1.0, f64::INFINITY]}
        }}));
        let reason = fail_if_non_finite(&mut bad).unwrap();
        assert!(is_failed(&bad));
        assert!(reason.contains("metrics.rmse"), "{reason}");
        assert!(reason.contains("metrics.per_draw.nll"), "{reason}");
        assert!(!reason.contains("metrics.nll,"), "{reason}");
        assert_eq!(text(&bad, "reason"), Some(reason.as_str()));

        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), "demo", ok).unwrap();
        append(dir.path(), "demo", bad).unwrap();
        assert_eq!(read(dir.path(), "demo").unwrap().len(), 2);
        assert_eq!(read_succeeded(dir.path(), "demo").unwrap().len(), 1);
    }
}
