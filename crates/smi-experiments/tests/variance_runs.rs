//! `reproduce variance` through the library: absurd sizes are refused up front.

mod common;

use common::{assert_refused_within, chain, p, reproduce};

#[test]
fn absurd_dimensions_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    for dims in ["1000000000", "2,18446744073709551615"] {
        let e = reproduce(&["variance", "--dims", dims, "--out", p(dir.path())]).unwrap_err();
        let e = chain(&e);
        assert!(e.contains("--dims") && e.contains("memory"), "{e}");
    }
    assert_refused_within(t, 10);
    assert!(!dir.path().join("variance.jsonl").exists());
}
