//! Helpers shared by the integration tests; each test file uses only some of them.
#![allow(dead_code)]

pub mod uci;

use proptest::prelude::ProptestConfig;

/// 256 cases, unless `PROPTEST_CASES` says otherwise.
pub fn config() -> ProptestConfig {
    let mut c = ProptestConfig::with_cases(256);
    if let Some(n) = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.cases = n;
    }
    c
}
