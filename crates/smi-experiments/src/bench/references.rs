//! The benchmark's reference numbers: NumPyro's CPU times and the speed targets, read from the
//! data file `references.json` beside this module (compiled in), so that they live with the
//! benchmark's data rather than in its code. BENCHMARKS.md ("What is measured") describes them.

use std::sync::OnceLock;

use serde::Deserialize;

/// The data file.
const FILE: &str = include_str!("references.json");

/// The parsed data file.
#[derive(Debug, Deserialize)]
struct References {
    numpyro_cpu: NumpyroCpu,
    targets: Targets,
}

#[derive(Debug, Deserialize)]
struct NumpyroCpu {
    #[allow(dead_code)]
    source: String,
    ms_per_step: Vec<Time>,
}

/// NumPyro's ms per step of one configuration and method.
#[derive(Debug, Deserialize)]
struct Time {
    config: String,
    method: String,
    ms: f64,
}

#[derive(Debug, Deserialize)]
struct Targets {
    #[allow(dead_code)]
    source: String,
    rules: Vec<Rule>,
}

/// One target rule: the line it matches (a missing field matches any) and its target.
#[derive(Debug, Deserialize)]
pub(super) struct Rule {
    config: Option<String>,
    method: Option<String>,
    reuse: Option<String>,
    /// Speed-up over NumPyro's CPU time the line must reach.
    pub(super) numpyro_speedup: Option<f64>,
    /// Fraction of the one-core GEMM peak the line's model flops must reach.
    pub(super) gemm_peak_fraction: Option<f64>,
}

fn references() -> &'static References {
    static PARSED: OnceLock<References> = OnceLock::new();
    // The file is compiled in and checked by a test; a broken edit fails that test, and here
    // leaves the benchmark without references rather than failing it.
    PARSED.get_or_init(|| {
        serde_json::from_str(FILE).unwrap_or(References {
            numpyro_cpu: NumpyroCpu {
                source: String::new(),
                ms_per_step: Vec::new(),
            },
            targets: Targets {
                source: String::new(),
                rules: Vec::new(),
            },
        })
    })
}

/// NumPyro's CPU ms per step for `config` and `method` (their names), if measured.
pub(super) fn numpyro_ms(config: &str, method: &str) -> Option<f64> {
    references()
        .numpyro_cpu
        .ms_per_step
        .iter()
        .find(|t| t.config == config && t.method == method)
        .map(|t| t.ms)
}

/// The first target rule matching a line of `config`, `method` and `reuse` (their names).
pub(super) fn target_rule(config: &str, method: &str, reuse: &str) -> Option<&'static Rule> {
    let hit = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    references()
        .targets
        .rules
        .iter()
        .find(|r| hit(&r.config, config) && hit(&r.method, method) && hit(&r.reuse, reuse))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{parse_method, parse_reuse, Config};

    #[test]
    fn the_data_file_parses_and_names_real_configs_methods_and_reuses() {
        let r: References = serde_json::from_str(FILE).expect("references.json parses");
        assert_eq!(r.numpyro_cpu.ms_per_step.len(), 13);
        for t in &r.numpyro_cpu.ms_per_step {
            assert!(Config::parse(&t.config).is_ok(), "{}", t.config);
            assert!(parse_method(&t.method).is_ok(), "{}", t.method);
            assert!(t.ms > 0.0 && t.ms.is_finite());
        }
        for rule in &r.targets.rules {
            if let Some(c) = &rule.config {
                assert!(Config::parse(c).is_ok(), "{c}");
            }
            if let Some(m) = &rule.method {
                assert!(parse_method(m).is_ok(), "{m}");
            }
            if let Some(u) = &rule.reuse {
                assert!(parse_reuse(u).is_ok(), "{u}");
            }
        }
        // the last rule matches every line, so every line with a NumPyro time has a target
        let last = r.targets.rules.last().unwrap();
        assert!(last.config.is_none() && last.method.is_none() && last.reuse.is_none());
        assert_eq!(numpyro_ms("boston-1h", "smi"), Some(157.0));
        assert_eq!(numpyro_ms("boston", "smi"), None);
    }
}
