//! Regression tests for corrupt or hostile inputs: gzip integrity on prefix reads, sizes taken
//! from files (IDX headers, `n_splits.txt`) and the length of quoted tokens in error messages.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use common::uci::{tiny_yacht, write};
use flate2::write::GzEncoder;
use flate2::Compression;
use smi_data::{
    parse_table, read_idx_images, read_idx_labels, ColumnConvention, Mnist, SplitKind, UciData,
    UciDataset, IMAGES_MAGIC, LABELS_MAGIC, MNIST_FILES,
};

fn images_bytes(count: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for x in [IMAGES_MAGIC, count, rows, cols] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    v.extend_from_slice(pixels);
    v
}

fn labels_bytes(count: u32, labels: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&LABELS_MAGIC.to_be_bytes());
    v.extend_from_slice(&count.to_be_bytes());
    v.extend_from_slice(labels);
    v
}

fn gz(bytes: &[u8], level: Compression) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), level);
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Position of `needle` in `hay` (it must occur).
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("pattern present in the stored gzip block")
}

/// Four 2×2 images whose last image is a distinctive byte pattern.
fn four_images() -> (Vec<u8>, [u8; 4]) {
    let last = [0xA1, 0xB2, 0xC3, 0xD4];
    let mut px = vec![0u8; 12];
    px.extend_from_slice(&last);
    (images_bytes(4, 2, 2, &px), last)
}

#[test]
fn gzip_corruption_is_caught_on_a_prefix_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (raw, last) = four_images();
    // Stored (uncompressed) deflate blocks: a flipped data byte still decodes, only the CRC tells.
    let mut z = gz(&raw, Compression::none());
    let at = find(&z, &last);
    z[at + 2] ^= 0x01;
    let p = tmp.path().join("images.gz");
    fs::write(&p, &z).unwrap();
    for limit in [Some(1), Some(3), None] {
        let err = read_idx_images(&p, limit).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("checksum does not match") && msg.contains("images.gz"),
            "limit {limit:?}: {msg}"
        );
    }

    let mut labels = labels_bytes(6, &[1, 2, 3, 4, 5, 6]);
    labels.extend_from_slice(&[]);
    let mut z = gz(&labels, Compression::none());
    let at = find(&z, &[4, 5, 6]);
    z[at + 1] ^= 0x02; // label 5 -> 7: still a valid label
    let p = tmp.path().join("labels.gz");
    fs::write(&p, &z).unwrap();
    for limit in [Some(1), None] {
        let msg = read_idx_labels(&p, limit).unwrap_err().to_string();
        assert!(
            msg.contains("checksum does not match") && msg.contains("labels.gz"),
            "limit {limit:?}: {msg}"
        );
    }
}

#[test]
fn mnist_quick_load_rejects_a_corrupt_training_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("mnist");
    fs::create_dir(&d).unwrap();
    let (raw, last) = four_images();
    let mut z = gz(&raw, Compression::none());
    let at = find(&z, &last);
    z[at] ^= 0x80;
    fs::write(d.join(MNIST_FILES[0]), &z).unwrap();
    fs::write(
        d.join(MNIST_FILES[1]),
        gz(&labels_bytes(4, &[0, 1, 2, 3]), Compression::default()),
    )
    .unwrap();
    fs::write(
        d.join(MNIST_FILES[2]),
        gz(&images_bytes(1, 2, 2, &[9; 4]), Compression::default()),
    )
    .unwrap();
    fs::write(
        d.join(MNIST_FILES[3]),
        gz(&labels_bytes(1, &[4]), Compression::default()),
    )
    .unwrap();
    let msg = Mnist::load_subset(tmp.path(), Some(2), Some(1))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(MNIST_FILES[0]) && msg.contains("checksum does not match"),
        "{msg}"
    );
}

/// Decodes a raw deflate stream, `None` if the decoder reports an error.
fn inflate(deflate: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(deflate)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

#[test]
fn full_read_of_a_corrupt_gzip_reports_the_checksum_not_trailing_bytes() {
    // Compressible pixels; find a flipped byte of the deflate body that still decodes, but to a
    // different length (the MNIST case of the issue: "trailing bytes after the data").
    let px: Vec<u8> = (0..4000u32).map(|i| ((i * i) % 7 * 30) as u8).collect();
    let raw = images_bytes(40, 10, 10, &px);
    let z = gz(&raw, Compression::default());
    let body = 10..z.len() - 8;
    let mut chosen = None;
    'search: for at in body.clone() {
        for bit in 0..8 {
            let mut m = z.clone();
            m[at] ^= 1 << bit;
            if let Some(out) = inflate(&m[body.clone()]) {
                // Header intact, more data than it announces.
                if out.len() > raw.len() && out[..16] == raw[..16] {
                    chosen = Some(m);
                    break 'search;
                }
            }
        }
    }
    let corrupt = chosen.expect("some single-bit flip decodes to a longer stream");
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("t10k-images.gz");
    fs::write(&p, &corrupt).unwrap();
    for limit in [None, Some(2)] {
        let msg = read_idx_images(&p, limit).unwrap_err().to_string();
        assert!(
            msg.contains("checksum does not match") && msg.contains("t10k-images.gz"),
            "limit {limit:?}: {msg}"
        );
        assert!(!msg.contains("trailing"), "{msg}");
    }
}

#[test]
fn idx_header_sizes_are_checked_against_the_file_even_for_prefix_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("short.idx");
    // The header announces 1000 images of 28×28, the file holds 10.
    fs::write(&p, images_bytes(1000, 28, 28, &vec![3u8; 10 * 784])).unwrap();
    let msg = read_idx_images(&p, Some(5)).unwrap_err().to_string();
    assert!(msg.contains("short.idx") && msg.contains("784000"), "{msg}");
    // Labels announcing 2^32 − 1 entries, three present.
    fs::write(&p, labels_bytes(u32::MAX, &[1, 2, 3])).unwrap();
    let msg = read_idx_labels(&p, Some(2)).unwrap_err().to_string();
    assert!(
        msg.contains("short.idx") && msg.contains("4294967295"),
        "{msg}"
    );
    // The same, gzip-compressed.
    let pz = tmp.path().join("short.gz");
    fs::write(
        &pz,
        gz(&labels_bytes(u32::MAX, &[1, 2, 3]), Compression::default()),
    )
    .unwrap();
    let msg = read_idx_labels(&pz, Some(2)).unwrap_err().to_string();
    assert!(msg.contains("short.gz"), "{msg}");
    // Bytes beyond what the header announces, also on a prefix read.
    let mut raw = labels_bytes(3, &[1, 2, 3]);
    raw.push(4);
    fs::write(&p, raw).unwrap();
    let msg = read_idx_labels(&p, Some(1)).unwrap_err().to_string();
    assert!(
        msg.contains("short.idx") && msg.contains("trailing"),
        "{msg}"
    );
}

/// `<tmp>/uci/yacht` with 4 rows and 2 standard splits.
fn tiny_uci() -> tempfile::TempDir {
    tiny_yacht("1 10 5\n2 20 6\n3 30 7\n4 40 8\n")
}

#[test]
fn n_splits_is_bounded_by_the_split_files_that_exist() {
    let tmp = tiny_uci();
    let dir = tmp.path().join("uci").join("yacht");
    let d = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper).unwrap();
    assert_eq!(d.n_splits(SplitKind::Standard).unwrap(), 2);

    for declared in ["18446744073709551615", "1e15", "1000000", "3"] {
        write(&dir, "n_splits.txt", &format!("{declared}\n"));
        let err = d.n_splits(SplitKind::Standard).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("n_splits.txt"), "{declared}: {msg}");
        assert!(d.splits(SplitKind::Standard).is_err(), "{declared}");
        assert!(d.split(SplitKind::Standard, 0).is_err(), "{declared}");
    }
    // n_splits = 3 with two pairs of index files: the message names the first missing file.
    write(&dir, "n_splits.txt", "3\n");
    let msg = d.n_splits(SplitKind::Standard).unwrap_err().to_string();
    assert!(msg.contains("index_train_2.txt"), "{msg}");
    // A missing test file counts as well.
    write(&dir, "n_splits.txt", "2\n");
    fs::remove_file(dir.join("index_test_1.txt")).unwrap();
    let msg = d.n_splits(SplitKind::Standard).unwrap_err().to_string();
    assert!(
        msg.contains("index_test_1.txt") && msg.contains("n_splits.txt"),
        "{msg}"
    );
}

#[test]
fn huge_tokens_are_cut_in_error_messages() {
    let huge = format!("1 2\n3 {}x\n", "7".repeat(5_000_000));
    let err = parse_table(&huge, Path::new("big.txt")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.len() < 400, "message of {} bytes", msg.len());
    assert!(msg.contains(&"7".repeat(40)), "{msg}");
    assert!(msg.contains("5000001"), "length of the token: {msg}");
    assert!(msg.contains("big.txt:2:2"), "{msg}");
    assert!(format!("{err:?}").len() < 400);

    // In an index file.
    let tmp = tiny_uci();
    let dir = tmp.path().join("uci").join("yacht");
    write(&dir, "index_test_0.txt", &"é".repeat(1_000_000));
    let d = UciData::load(tmp.path(), UciDataset::Yacht, ColumnConvention::Paper).unwrap();
    let msg = d.standard_split(0).unwrap_err().to_string();
    assert!(msg.len() < 600, "message of {} bytes", msg.len());
    assert!(msg.contains("index_test_0.txt:1:1"), "{msg}");
    assert!(msg.contains("2000000"), "{msg}");
    // A short token is quoted whole, as before.
    let msg = parse_table("1 2\n3 x4\n", Path::new("s.txt"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("\"x4\""), "{msg}");
    // Names given on the command line.
    let msg = "q"
        .repeat(100_000)
        .parse::<UciDataset>()
        .unwrap_err()
        .to_string();
    assert!(msg.len() < 1000, "message of {} bytes", msg.len());
}
