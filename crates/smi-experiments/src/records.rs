//! Experiment records: one JSON object per line in `<out>/<experiment>.jsonl`.
//!
//! Every record carries `experiment`, `method`, `seed`, its setting, `metrics`, `steps`,
//! `seconds`, `config` and `version`. Appending writes one whole line with a single `write`
//! call on a file opened in append mode, so an interrupted run never corrupts earlier records;
//! a torn last line (power loss) is skipped with a warning when reading.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{Map, Value};

/// The program version written into every record.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The records file of `experiment` in `out`.
pub fn path(out: &Path, experiment: &str) -> PathBuf {
    out.join(format!("{experiment}.jsonl"))
}

/// Appends `record` (a JSON object) to `<out>/<experiment>.jsonl`, adding `experiment` and
/// `version` when missing.
pub fn append(out: &Path, experiment: &str, mut record: Map<String, Value>) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    record
        .entry("experiment")
        .or_insert_with(|| Value::from(experiment));
    record
        .entry("version")
        .or_insert_with(|| Value::from(VERSION));
    let mut line = serde_json::to_string(&Value::Object(record))?;
    line.push('\n');
    let p = path(out, experiment);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .with_context(|| format!("cannot open {}", p.display()))?;
    f.write_all(line.as_bytes())
        .with_context(|| format!("cannot append to {}", p.display()))?;
    Ok(())
}

/// Reads every record of `<out>/<experiment>.jsonl` (none if the file is missing).
pub fn read(out: &Path, experiment: &str) -> Result<Vec<Map<String, Value>>> {
    let p = path(out, experiment);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", p.display())),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => out.push(m),
            _ => eprintln!(
                "warning: {}:{}: skipping an unreadable record",
                p.display(),
                i + 1
            ),
        }
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn append_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3 {
            let Value::Object(m) = json!({"method": "smi", "metrics": {"x": i}}) else {
                unreachable!()
            };
            append(dir.path(), "demo", m).unwrap();
        }
        // A torn last line is skipped.
        let p = path(dir.path(), "demo");
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"method\": \"sm").unwrap();
        let recs = read(dir.path(), "demo").unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(num(&recs[2], "metrics.x"), Some(2.0));
        assert_eq!(text(&recs[0], "experiment"), Some("demo"));
        assert!(read(dir.path(), "none").unwrap().is_empty());
    }
}
