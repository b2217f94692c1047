//! A tiny UCI data set directory for the integration tests.

use std::fs;
use std::path::Path;

/// Writes `text` to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) {
    fs::write(dir.join(name), text).unwrap();
}

/// `<tmp>/uci/yacht` with `data` as `data.txt`, feature columns 0 and 1, target column 2 and
/// two standard splits (train 0, 1, 2 / test 3; train 3, 2 / test 0, 1).
pub fn tiny_yacht(data: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("uci").join("yacht");
    fs::create_dir_all(&d).unwrap();
    write(&d, "data.txt", data);
    write(&d, "index_features.txt", "0\n1\n");
    write(&d, "index_target.txt", "2\n");
    write(&d, "n_splits.txt", "2\n");
    write(&d, "index_train_0.txt", "0\n1\n2\n");
    write(&d, "index_test_0.txt", "3\n");
    write(&d, "index_train_1.txt", "3\n2\n");
    write(&d, "index_test_1.txt", "0\n1\n");
    tmp
}
