//! Tests on the real files of the data folder (`$SMI_TEST_DATA_DIR`, else `shared/data` beside
//! the repository, else the per-user folder `smi data fetch` fills). Without the files they are
//! listed as ignored, with the reason, rather than passing: `build.rs` sets the cfgs
//! `smi_no_uci_data` / `smi_no_mnist_data` when the files are missing.

use std::path::{Path, PathBuf};

use smi_data::{ColumnConvention, FileStatus, Mnist, SplitKind, UciData, UciDataset};

/// The data folder the build script found (see `crates/smi-data/build.rs`). A test that gets
/// here runs because the files were there when it was built: their absence now is a failure.
fn data_dir() -> PathBuf {
    let d = PathBuf::from(env!("SMI_TEST_DATA_DIR"));
    assert!(
        d.is_dir(),
        "{} vanished since the tests were built; rebuild them",
        d.display()
    );
    d
}

/// (dataset, rows, features under Paper, train, test, standard splits, features under IndexFiles)
const TABLE: [(UciDataset, usize, usize, usize, usize, usize, usize); 9] = [
    (UciDataset::Boston, 506, 13, 455, 51, 20, 13),
    (UciDataset::Concrete, 1030, 8, 927, 103, 20, 8),
    (UciDataset::Energy, 768, 8, 691, 77, 20, 8),
    (UciDataset::Kin8nm, 8192, 8, 7373, 819, 20, 8),
    (UciDataset::Naval, 11934, 17, 10741, 1193, 20, 16),
    (UciDataset::Power, 9568, 4, 8611, 957, 20, 4),
    (UciDataset::Protein, 45730, 9, 41157, 4573, 5, 9),
    (UciDataset::Wine, 1599, 11, 1439, 160, 20, 11),
    (UciDataset::Yacht, 308, 6, 277, 31, 20, 6),
];

/// Loads `ds` under `convention` and requires it to have `rows` rows and `cols` features.
fn load(
    dir: &Path,
    ds: UciDataset,
    convention: ColumnConvention,
    rows: usize,
    cols: usize,
) -> UciData {
    let d = UciData::load(dir, ds, convention).unwrap();
    assert_eq!((d.rows, d.cols), (rows, cols), "{ds}");
    d
}

fn is_partition(train: &[usize], test: &[usize], n: usize) -> bool {
    let mut seen = vec![false; n];
    for &i in train.iter().chain(test) {
        if seen[i] {
            return false;
        }
        seen[i] = true;
    }
    seen.into_iter().all(|b| b)
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn uci_shapes_and_standard_splits_match_readme() {
    let dir = data_dir();
    for (ds, rows, cols, n_tr, n_te, k, _) in TABLE {
        let d = load(&dir, ds, ColumnConvention::Paper, rows, cols);
        assert_eq!(d.x.len(), rows * cols);
        assert_eq!(d.y.len(), rows);
        assert_eq!(d.target_column, cols, "{ds}: paper target = last column");
        let splits = d.splits(SplitKind::Standard).unwrap();
        assert_eq!(splits.len(), k, "{ds}");
        for (i, s) in splits.iter().enumerate() {
            assert_eq!(
                (s.train.len(), s.test.len()),
                (n_tr, n_te),
                "{ds} split {i}"
            );
            assert!(is_partition(&s.train, &s.test, rows), "{ds} split {i}");
        }
        assert!(d.standard_split(k).is_err());
    }
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn uci_index_files_convention() {
    let dir = data_dir();
    for (ds, rows, _, _, _, _, cols) in TABLE {
        load(&dir, ds, ColumnConvention::IndexFiles, rows, cols);
    }
    let paper = UciData::load(&dir, UciDataset::Naval, ColumnConvention::Paper).unwrap();
    let index = UciData::load(&dir, UciDataset::Naval, ColumnConvention::IndexFiles).unwrap();
    assert_eq!((paper.cols, paper.target_column), (17, 17));
    assert_eq!((index.cols, index.target_column), (16, 16));
    // The index-file target (compressor decay) is the paper's 17th feature.
    for r in [0, 5000, 11933] {
        assert_eq!(paper.x_row(r).unwrap()[16], index.y[r]);
    }
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn gap10_split_counts_and_sizes_match_table5() {
    let dir = data_dir();
    for (ds, rows, cols, n_tr, n_te, _, _) in TABLE {
        let d = UciData::load(&dir, ds, ColumnConvention::Paper).unwrap();
        let splits = d.splits(SplitKind::Gap10).unwrap();
        assert_eq!(splits.len(), cols, "{ds}: one Gap10 split per feature");
        assert_eq!(d.n_splits(SplitKind::Gap10).unwrap(), cols);
        for (k, s) in splits.iter().enumerate() {
            assert_eq!((s.train.len(), s.test.len()), (n_tr, n_te), "{ds} gap {k}");
            assert!(is_partition(&s.train, &s.test, rows), "{ds} gap {k}");
            // The test rows are the middle of feature k: none below a training row's value
            // in the lower tail, none above one in the upper tail.
            let v = |r: usize| d.x[r * cols + k];
            let lo = s.test.iter().map(|&r| v(r)).fold(f64::INFINITY, f64::min);
            let hi = s
                .test
                .iter()
                .map(|&r| v(r))
                .fold(f64::NEG_INFINITY, f64::max);
            let before = rows * 45 / 100;
            assert!(
                s.train[..before].iter().all(|&r| v(r) <= lo),
                "{ds} gap {k}"
            );
            assert!(
                s.train[before..].iter().all(|&r| v(r) >= hi),
                "{ds} gap {k}"
            );
        }
    }
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn prepared_standardises_with_training_statistics() {
    let dir = data_dir();
    let d = UciData::load(&dir, UciDataset::Naval, ColumnConvention::Paper).unwrap();
    let s = d.standard_split(0).unwrap();
    let p = d.prepared(&s).unwrap();
    assert_eq!((p.x_train.rows, p.x_train.cols), (10741, 17));
    assert_eq!((p.x_test.rows, p.x_test.cols), (1193, 17));
    for c in 0..17 {
        let col: Vec<f64> = (0..p.x_train.rows)
            .map(|r| p.x_train.values[r * 17 + c])
            .collect();
        let m = col.iter().sum::<f64>() / col.len() as f64;
        let v = col.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / col.len() as f64;
        assert!(m.abs() < 1e-9, "col {c} mean {m}");
        if c == 8 || c == 11 {
            // Constant columns: std replaced by 1, values become exactly 0.
            assert_eq!(p.standardizer.std[c], 1.0);
            assert!(col.iter().all(|&x| x == 0.0));
        } else {
            assert!((v - 1.0).abs() < 1e-9, "col {c} var {v}");
        }
    }
    // y stays raw.
    assert_eq!(p.y_test[0], d.y[s.test[0]]);
    assert_eq!(p.y_train[3], d.y[s.train[3]]);
    // The learning-rate search's 90/10 hold-out of split 0.
    let h = s.validation_holdout(0.1, 10).unwrap();
    assert_eq!((h.train.len(), h.test.len()), (9666, 1075));
    assert!(h.train.iter().chain(&h.test).all(|r| s.train.contains(r)));
}

#[test]
fn missing_dataset_names_directory() {
    let msg = UciData::load(
        Path::new("/nonexistent/data"),
        UciDataset::Boston,
        ColumnConvention::Paper,
    )
    .unwrap_err()
    .to_string();
    assert!(msg.contains("boston") && msg.contains("/nonexistent/data/uci/bostonHousing"));
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs MNIST: ../shared/data or `smi data fetch mnist`"
)]
fn mnist_counts_and_label_histograms() {
    let dir = data_dir();
    let m = Mnist::load(&dir).unwrap();
    assert_eq!(m.train.len(), 60_000);
    assert_eq!(m.test.len(), 10_000);
    assert_eq!(m.train.pixels_per_image, 784);
    assert_eq!(m.train.images.len(), 60_000 * 784);
    assert_eq!(m.test.images.len(), 10_000 * 784);
    assert_eq!(
        m.train.label_histogram(),
        [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    );
    assert_eq!(
        m.test.label_histogram(),
        [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    );
    let (lo, hi) = m
        .train
        .images
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    assert_eq!((lo, hi), (0.0, 1.0));
    // The first training label of MNIST is a 5, the first test label a 7.
    assert_eq!((m.train.labels[0], m.test.labels[0]), (5, 7));

    let sub = Mnist::load_subset(&dir, Some(100), Some(10)).unwrap();
    assert_eq!((sub.train.len(), sub.test.len()), (100, 10));
    assert_eq!(sub.train.image(99), m.train.image(99));
    assert_eq!(sub.test.labels, m.test.labels[..10].to_vec());
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn boston_validation_holdout_matches_sklearn() {
    // Python (numpy 2.4.6, scikit-learn), in shared/data/uci:
    //   tr0 = np.loadtxt('bostonHousing/index_train_0.txt').astype(int)
    //   x = np.loadtxt('bostonHousing/data.txt')[:, :-1]
    //   xtr, xval = train_test_split(x[tr0], test_size=0.1, random_state=10)
    //   val_rows = tr0[train_test_split(np.arange(len(tr0)), test_size=0.1, random_state=10)[1]]
    //   print(val_rows[:5])                        # [0, 318, 339, 310, 179]
    //   m = xtr.mean(0); s = xtr.std(0)
    //   print(m[0], s[0], ((xval - m) / s)[0, 0])  # 3.779828239608803 9.04723000765541 -0.4170898978378807
    let dir = data_dir();
    let d = UciData::load(&dir, UciDataset::Boston, ColumnConvention::Paper).unwrap();
    let h = d
        .standard_split(0)
        .unwrap()
        .validation_holdout(0.1, 10)
        .unwrap();
    assert_eq!((h.train.len(), h.test.len()), (409, 46));
    assert_eq!(&h.test[..5], &[0, 318, 339, 310, 179]);
    let p = d.prepared(&h).unwrap();
    // numpy sums pairwise, we sum sequentially: agreement to ~1e-15 relative.
    assert!((p.standardizer.mean[0] - 3.779828239608803).abs() < 1e-12);
    assert!((p.standardizer.std[0] - 9.04723000765541).abs() < 1e-12);
    assert!((p.x_test.values[0] - -0.4170898978378807).abs() < 1e-12);
}

/// The case: MNIST training images with byte 200 of the `.gz` flipped. A quick run reads
/// only the first images; it must fail, naming the file and the checksum, like a full read.
#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs MNIST: ../shared/data or `smi data fetch mnist`"
)]
fn mnist_with_a_flipped_gzip_byte_is_rejected_even_for_a_prefix() {
    let dir = data_dir();
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("mnist");
    std::fs::create_dir(&copy).unwrap();
    for f in smi_data::MNIST_FILES {
        std::fs::copy(dir.join("mnist").join(f), copy.join(f)).unwrap();
    }
    let train_images = copy.join(smi_data::MNIST_FILES[0]);
    let mut z = std::fs::read(&train_images).unwrap();
    z[200] ^= 0xff;
    std::fs::write(&train_images, &z).unwrap();
    for (train, test) in [(Some(100), Some(10)), (Some(1), None), (None, None)] {
        let msg = Mnist::load_subset(tmp.path(), train, test)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(smi_data::MNIST_FILES[0]) && msg.contains("checksum does not match"),
            "{train:?}/{test:?}: {msg}"
        );
        assert!(!msg.contains("trailing"), "{msg}");
    }
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn the_catalog_checksums_match_the_data_folder() {
    let dir = data_dir();
    // The catalog's list is a copy of the folder's own list, when the folder has one.
    if let Ok(sums) = std::fs::read_to_string(dir.join("SHA256SUMS")) {
        assert_eq!(
            smi_data::parse_sha256sums(&sums).unwrap(),
            smi_data::parse_sha256sums(smi_data::SHA256SUMS).unwrap()
        );
    }
    // Every file of the smallest set verifies (48 files, 60 kB).
    let sets = smi_data::catalog().unwrap();
    let yacht = &smi_data::select(&sets, "yacht").unwrap()[0];
    for f in &yacht.files {
        assert_eq!(
            smi_data::verify_file(&dir, f).unwrap(),
            FileStatus::Ok,
            "{}",
            f.path
        );
    }
}
