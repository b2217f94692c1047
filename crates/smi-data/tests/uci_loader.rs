//! Loading UCI data set folders: column conventions, standard splits and their validation,
//! malformed files, missing data and the validation hold-out (on a tiny generated folder).

mod common;

use std::fs;

use common::uci::{tiny_yacht, write};
use smi_data::*;

/// A tiny data set in `<tmp>/uci/yacht`.
fn tiny() -> tempfile::TempDir {
    tiny_yacht("1 10 100 5\n2 20 200 6\n3 30 300 7\n4 40 400 8\n\n")
}

#[test]
fn conventions_select_columns() {
    let tmp = tiny();
    let p = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper).unwrap();
    assert_eq!((p.rows, p.cols, p.target_column), (4, 3, 3));
    assert_eq!(p.y, vec![5.0, 6.0, 7.0, 8.0]);
    assert_eq!(p.x_row(1), Some(&[2.0, 20.0, 200.0][..]));
    let i = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::IndexFiles).unwrap();
    assert_eq!((i.rows, i.cols, i.target_column), (4, 2, 2));
    assert_eq!(i.y, vec![100.0, 200.0, 300.0, 400.0]);
    assert_eq!(i.feature_columns, vec![0, 1]);
}

#[test]
fn standard_splits_load_and_validate() {
    let tmp = tiny();
    let d = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper).unwrap();
    let s = d.splits(SplitKind::Standard).unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].train, vec![3, 2]);
    assert!(matches!(
        d.standard_split(2),
        Err(Error::SplitOutOfRange { available: 2, .. })
    ));
    let dir = tmp.path().join("uci").join("yacht");
    write(&dir, "index_test_1.txt", "0\n7\n");
    let err = d.standard_split(1).unwrap_err();
    assert!(
        matches!(
            err,
            Error::IndexOutOfRange {
                line: 2,
                index: 7,
                bound: 4,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("index_test_1.txt:2"), "{err}");
    write(&dir, "index_test_1.txt", "0\n0\n");
    assert!(matches!(
        d.standard_split(1),
        Err(Error::DuplicateIndex { .. })
    ));
    write(&dir, "index_test_1.txt", "3\n");
    assert!(matches!(
        d.standard_split(1),
        Err(Error::OverlappingSplit { row: 3, .. })
    ));
    fs::remove_file(dir.join("index_train_1.txt")).unwrap();
    let err = d.standard_split(1).unwrap_err().to_string();
    assert!(
        err.contains("yacht") && err.contains("index_train_1.txt"),
        "{err}"
    );
}

#[test]
fn malformed_data_file_errors() {
    let tmp = tiny();
    let dir = tmp.path().join("uci").join("yacht");
    write(&dir, "data.txt", "1 2 3\n4 5 6\n7 8,5 9\n");
    let err = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            Error::Parse {
                line: 3,
                column: 2,
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.contains("data.txt:3:2") && msg.contains("8,5"), "{msg}");

    write(&dir, "data.txt", "1 2 3\n4 5 6\n7 8\n");
    let err = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper).unwrap_err();
    let Error::RaggedRow {
        line,
        found,
        expected,
        ..
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!((line, found, expected), (3, 2, 3));

    write(&dir, "data.txt", "\n\n");
    let err = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper).unwrap_err();
    assert!(matches!(err, Error::EmptyFile { .. }), "{err}");

    write(&dir, "data.txt", "1\n2\n");
    assert!(matches!(
        UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper),
        Err(Error::Inconsistent { .. })
    ));

    write(&dir, "data.txt", "1 2 3\n");
    write(&dir, "index_target.txt", "3\n");
    assert!(matches!(
        UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::IndexFiles),
        Err(Error::IndexOutOfRange {
            index: 3,
            bound: 3,
            ..
        })
    ));
}

#[test]
fn missing_data_names_dataset_and_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let err = UciData::load(tmp.path(), UciDataset::Naval, ColumnConvention::Paper).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::MissingFile { .. }));
    assert!(msg.starts_with("naval:"), "{msg}");
    assert!(msg.contains("data.txt"), "{msg}");
    let searched = tmp.path().join("uci").join("naval-propulsion-plant");
    assert!(msg.contains(&searched.display().to_string()), "{msg}");
}

#[test]
fn holdout_maps_positions_to_rows() {
    let s = Split {
        train: (100..110).collect(),
        test: vec![0],
    };
    let h = s.validation_holdout(0.1, 10).unwrap();
    // numpy: RandomState(10).permutation(10) = [8, 2, 5, 6, 3, 1, 0, 7, 4, 9]
    assert_eq!(h.test, vec![108]);
    assert_eq!(h.train, vec![102, 105, 106, 103, 101, 100, 107, 104, 109]);
}
