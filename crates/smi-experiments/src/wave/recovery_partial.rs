//! The finished fits of a recovery repeat that is not recorded yet, so that an interrupted repeat
//! resumes where it stopped instead of starting over.
//!
//! A repeat of `smi reproduce recovery` is one record per region, written only when its SMI fit
//! and its whole SVGD sweep are done: at the moderate size that is hours of fitting. After each
//! fit the repeat's outcomes so far (LPPDs per region, seconds, engine settings) are written to
//! `<out>/checkpoints/recovery-<size>-r<repeat>-s<seed>.json`; a rerun reads them back and fits
//! only what is missing. The fits are seeded per (repeat, method, m), so a resumed repeat gives
//! the same numbers as an uninterrupted one. An outcome is reused only when its engine settings
//! equal the ones this run would use, and the file only when its key (size, repeat, seed,
//! phase, steps, predictive draws, preset) is this repeat's; anything else is refitted. The file
//! is removed once the repeat's records are written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Evaluation, Fitted, Region};

/// One finished fit of a repeat: what the repeat's records need from it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Outcome {
    /// Proper LPPD per region name (`None`: not finite).
    pub lppd: BTreeMap<String, Option<f64>>,
    /// Log-sum LPPD (the paper's SVGD artifact) per region name (`None`: not finite).
    pub lppd_log_sum: BTreeMap<String, Option<f64>>,
    /// Wall-clock seconds of the fit.
    pub seconds: f64,
    /// CPU seconds of the fit (`None` where unreadable).
    pub cpu_seconds: Option<f64>,
    /// The engine settings the fit ran with (as recorded).
    pub config: Value,
    /// The settings the fit was asked for (compared on reuse).
    pub settings: Value,
}

impl Outcome {
    /// The outcome of `fitted`, scored by `eval`, asked for with `settings`.
    pub fn new(fitted: &Fitted, eval: &Evaluation, settings: &Value) -> Outcome {
        let by_name = |m: &BTreeMap<Region, f64>| {
            Region::ALL
                .iter()
                .map(|r| {
                    let v = m.get(r).copied().filter(|v| v.is_finite());
                    (r.name().to_string(), v)
                })
                .collect()
        };
        Outcome {
            lppd: by_name(&eval.lppd),
            lppd_log_sum: by_name(&eval.lppd_log_sum),
            seconds: fitted.seconds,
            cpu_seconds: fitted.cpu_seconds,
            config: fitted.config.clone(),
            settings: settings.clone(),
        }
    }

    /// The LPPD of `region` (the log-sum one with `log_sum`); NaN where it was not finite.
    pub fn lppd(&self, region: Region, log_sum: bool) -> f64 {
        let m = if log_sum {
            &self.lppd_log_sum
        } else {
            &self.lppd
        };
        m.get(region.name()).copied().flatten().unwrap_or(f64::NAN)
    }
}

/// The finished fits of one repeat.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Partial {
    /// What identifies the repeat (size, repeat, seed, phase, steps, predictive draws, preset).
    pub key: Value,
    /// The SMI fit, once done.
    pub smi: Option<Outcome>,
    /// The SVGD fits done so far, by particle count.
    pub svgd: BTreeMap<usize, Outcome>,
}

impl Partial {
    /// An empty partial repeat with this key.
    pub fn new(key: Value) -> Partial {
        Partial {
            key,
            smi: None,
            svgd: BTreeMap::new(),
        }
    }

    /// The SMI outcome when it was fitted with `settings`.
    pub fn smi_with(&self, settings: &Value) -> Option<&Outcome> {
        self.smi.as_ref().filter(|o| same(&o.settings, settings))
    }

    /// The SVGD outcome at `m` particles when it was fitted with `settings`.
    pub fn svgd_with(&self, m: usize, settings: &Value) -> Option<&Outcome> {
        self.svgd.get(&m).filter(|o| same(&o.settings, settings))
    }
}

/// Settings compared after the JSON round trip a stored value went through.
fn same(stored: &Value, wanted: &Value) -> bool {
    serde_json::from_str::<Value>(&wanted.to_string()).is_ok_and(|w| &w == stored)
}

/// The file of the repeat `repeat` (seed `seed`) at size `size` under `out`.
pub(super) fn path(out: &Path, size: &str, repeat: usize, seed: u64) -> PathBuf {
    out.join("checkpoints")
        .join(format!("recovery-{size}-r{repeat}-s{seed}.json"))
}

/// Reads the partial repeat at `path` when its key is `key`; a new empty one otherwise (no
/// file, another key, or a file that cannot be read or parsed: the latter two say so on stderr,
/// as the file will be overwritten).
pub(super) fn load(path: &Path, key: &Value, label: &str) -> Partial {
    let key: Value = serde_json::from_str(&key.to_string()).unwrap_or_else(|_| key.clone());
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Partial::new(key),
        Err(e) => {
            eprintln!(
                "{label}: cannot read the partial repeat {} ({e}); starting the repeat over",
                path.display()
            );
            return Partial::new(key);
        }
    };
    match serde_json::from_str::<Partial>(&text) {
        Ok(p) if p.key == key => {
            let fits = usize::from(p.smi.is_some()) + p.svgd.len();
            if fits > 0 {
                eprintln!(
                    "{label}: resuming from {} ({fits} fits already done)",
                    path.display()
                );
            }
            p
        }
        Ok(_) => {
            eprintln!(
                "{label}: the partial repeat {} belongs to other settings; starting the repeat over",
                path.display()
            );
            Partial::new(key)
        }
        Err(e) => {
            eprintln!(
                "{label}: the partial repeat {} is unreadable ({e}); starting the repeat over",
                path.display()
            );
            Partial::new(key)
        }
    }
}

/// Writes `partial` to `path` atomically (creating its folder).
pub(super) fn save(path: &Path, partial: &Partial) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(partial).context("cannot encode a partial repeat")?;
    smi_fit::files::write_atomic(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Removes the file of a repeat whose records are written (a missing file is fine).
pub(super) fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(v: f64, settings: Value) -> Outcome {
        let lppd: BTreeMap<String, Option<f64>> = Region::ALL
            .iter()
            .map(|r| (r.name().to_string(), Some(v).filter(|v| v.is_finite())))
            .collect();
        Outcome {
            lppd: lppd.clone(),
            lppd_log_sum: lppd,
            seconds: 1.5,
            cpu_seconds: Some(2.5),
            config: json!({"steps": 10}),
            settings,
        }
    }

    #[test]
    fn a_saved_repeat_reads_back_whole_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let key = json!({"size": "low", "repeat": 1, "seed": 7});
        let p = path(dir.path(), "low", 1, 7);
        assert_eq!(load(&p, &key, "t"), Partial::new(key.clone()));
        let mut partial = Partial::new(key.clone());
        partial.smi = Some(outcome(-1.25, json!({"m": 5})));
        partial.svgd.insert(2, outcome(f64::NAN, json!({"m": 2})));
        save(&p, &partial).unwrap();
        let back = load(&p, &key, "t");
        assert_eq!(back, partial);
        assert_eq!(back.smi_with(&json!({"m": 5})).unwrap().seconds, 1.5);
        assert!(back.smi_with(&json!({"m": 6})).is_none());
        let two = back.svgd_with(2, &json!({"m": 2})).unwrap();
        assert!(two.lppd(Region::In, false).is_nan());
        assert!(back.svgd_with(4, &json!({"m": 4})).is_none());
        assert_eq!(
            back.smi.as_ref().unwrap().lppd(Region::Between, true),
            -1.25
        );
        remove(&p).unwrap();
        assert!(!p.exists());
        remove(&p).unwrap();
    }

    #[test]
    fn another_key_or_a_torn_file_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let key = json!({"size": "low", "repeat": 0, "seed": 3});
        let p = path(dir.path(), "low", 0, 3);
        let mut partial = Partial::new(json!({"size": "low", "repeat": 0, "seed": 4}));
        partial.smi = Some(outcome(-1.0, json!({})));
        save(&p, &partial).unwrap();
        assert_eq!(load(&p, &key, "t"), Partial::new(key.clone()));
        std::fs::write(&p, "{\"key\": ").unwrap();
        assert_eq!(load(&p, &key, "t"), Partial::new(key));
    }
}
