//! Property-based harness for the IDX (MNIST) reader: [`read_idx_images`] and
//! [`read_idx_labels`] on raw and gzip-compressed files.
//!
//! Arbitrary bytes and mutated valid files must never panic (nor abort on a huge allocation):
//! the result is an error or a consistent value. A gzip file whose bytes were changed must never
//! yield data different from the original's, whether read whole or only its first images (the
//! CRC32 of the whole stream is checked first). Valid files round-trip in every encoding.
//!
//! 256 cases per property by default; `PROPTEST_CASES=100000 cargo test -p smi-data --release
//! --test harness_idx` runs longer.

mod common;

use std::io::Write;
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;
use proptest::collection::vec;
use proptest::prelude::*;
use smi_data::{read_idx_images, read_idx_labels, Error, IdxImages, IMAGES_MAGIC, LABELS_MAGIC};

fn images_bytes(im: &IdxImages) -> Vec<u8> {
    let mut v = Vec::new();
    for x in [
        IMAGES_MAGIC,
        im.count as u32,
        im.rows as u32,
        im.cols as u32,
    ] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    v.extend_from_slice(&im.pixels);
    v
}

fn labels_bytes(labels: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&LABELS_MAGIC.to_be_bytes());
    v.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    v.extend_from_slice(labels);
    v
}

/// How a file is stored.
#[derive(Clone, Copy, Debug)]
enum Encoding {
    Raw,
    /// One gzip member at this level.
    Gzip(u32),
    /// Two gzip members, the content split at this fraction (per mille).
    TwoMembers(u32, usize),
}

fn gz(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::new(level));
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn encode(bytes: &[u8], enc: Encoding) -> Vec<u8> {
    match enc {
        Encoding::Raw => bytes.to_vec(),
        Encoding::Gzip(level) => gz(bytes, level),
        Encoding::TwoMembers(level, per_mille) => {
            let at = bytes.len() * per_mille / 1000;
            let mut v = gz(&bytes[..at], level);
            v.extend(gz(&bytes[at..], level));
            v
        }
    }
}

fn encoding() -> impl Strategy<Value = Encoding> {
    prop_oneof![
        Just(Encoding::Raw),
        (0u32..=9).prop_map(Encoding::Gzip),
        (0u32..=9, 0usize..=1000).prop_map(|(l, p)| Encoding::TwoMembers(l, p)),
    ]
}

fn gzip_encoding() -> impl Strategy<Value = Encoding> {
    prop_oneof![
        (0u32..=9).prop_map(Encoding::Gzip),
        (0u32..=9, 0usize..=1000).prop_map(|(l, p)| Encoding::TwoMembers(l, p)),
    ]
}

/// Small valid image sets (pixels compressible or not).
fn images() -> impl Strategy<Value = IdxImages> {
    (0usize..6, 1usize..5, 1usize..5).prop_flat_map(|(count, rows, cols)| {
        let n = count * rows * cols;
        prop_oneof![vec(any::<u8>(), n), vec(0u8..3, n)].prop_map(move |pixels| IdxImages {
            count,
            rows,
            cols,
            pixels,
        })
    })
}

fn labels() -> impl Strategy<Value = Vec<u8>> {
    vec(0u8..10, 0..20)
}

fn limit() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![
        Just(None),
        (0usize..8).prop_map(Some),
        Just(Some(usize::MAX))
    ]
}

/// A change to a file's bytes, at positions taken modulo its length.
#[derive(Clone, Debug)]
enum Mutation {
    FlipBit(usize, u8),
    SetByte(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Append(Vec<u8>),
    /// Overwrites the big-endian `u32` at byte `4·field` (an IDX header field of a raw file).
    HeaderField(usize, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let big = prop_oneof![
        Just(0u32),
        Just(1),
        Just(28),
        Just(65535),
        Just(1 << 24),
        Just(u32::MAX),
        any::<u32>()
    ];
    prop_oneof![
        3 => (any::<usize>(), 0u8..8).prop_map(|(p, b)| Mutation::FlipBit(p, b)),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::SetByte(p, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), vec(any::<u8>(), 1..8)).prop_map(|(p, b)| Mutation::Insert(p, b)),
        1 => vec(any::<u8>(), 1..8).prop_map(Mutation::Append),
        2 => (0usize..4, big).prop_map(|(f, v)| Mutation::HeaderField(f, v)),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len();
    match m {
        Mutation::FlipBit(p, b) if n > 0 => bytes[p % n] ^= 1 << b,
        Mutation::SetByte(p, b) if n > 0 => bytes[p % n] = *b,
        Mutation::Truncate(p) => bytes.truncate(p % (n + 1)),
        Mutation::Insert(p, b) => {
            let at = p % (n + 1);
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::Append(b) => bytes.extend_from_slice(b),
        Mutation::HeaderField(f, v) if n >= 4 * f + 4 => {
            bytes[4 * f..4 * f + 4].copy_from_slice(&v.to_be_bytes());
        }
        _ => {}
    }
}

/// Checks that an image result is consistent with itself and the limit; returns it.
fn check_images(
    r: Result<IdxImages, Error>,
    limit: Option<usize>,
) -> Result<Option<IdxImages>, TestCaseError> {
    match r {
        Ok(im) => {
            prop_assert!(im.rows > 0 && im.cols > 0);
            prop_assert_eq!(im.pixels.len(), im.count * im.rows * im.cols);
            prop_assert!(im.count <= limit.unwrap_or(usize::MAX));
            Ok(Some(im))
        }
        Err(e) => {
            prop_assert!(e.to_string().len() < 1000);
            Ok(None)
        }
    }
}

fn check_labels(
    r: Result<Vec<u8>, Error>,
    limit: Option<usize>,
) -> Result<Option<Vec<u8>>, TestCaseError> {
    match r {
        Ok(l) => {
            prop_assert!(l.iter().all(|&x| x < 10));
            prop_assert!(l.len() <= limit.unwrap_or(usize::MAX));
            Ok(Some(l))
        }
        Err(e) => {
            prop_assert!(e.to_string().len() < 1000);
            Ok(None)
        }
    }
}

/// The first `limit` images of `im`.
fn prefix(im: &IdxImages, limit: Option<usize>) -> IdxImages {
    let count = limit.map_or(im.count, |k| k.min(im.count));
    IdxImages {
        count,
        rows: im.rows,
        cols: im.cols,
        pixels: im.pixels[..count * im.rows * im.cols].to_vec(),
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Leading bytes that get arbitrary data past the first checks.
fn lead() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        Just(vec![0x1f, 0x8b]),
        Just(vec![0x1f, 0x8b, 8, 0]),
        Just(IMAGES_MAGIC.to_be_bytes().to_vec()),
        Just(LABELS_MAGIC.to_be_bytes().to_vec()),
    ]
}

proptest! {
    #![proptest_config(common::config())]

    /// Any bytes (after a prefix that reaches past the magic-number checks).
    #[test]
    fn arbitrary_bytes_never_panic(
        lead in lead(),
        bytes in vec(any::<u8>(), 0..300),
        limit in limit(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = lead;
        all.extend(bytes);
        let p = write(tmp.path(), "x.idx", &all);
        // Raw, and the same bytes gzip-compressed (a valid stream of possibly invalid IDX).
        let pz = write(tmp.path(), "x.gz", &gz(&all, 6));
        let a = check_images(read_idx_images(&p, limit), limit)?;
        let b = check_images(read_idx_images(&pz, limit), limit)?;
        prop_assert_eq!(a, b);
        let a = check_labels(read_idx_labels(&p, limit), limit)?;
        let b = check_labels(read_idx_labels(&pz, limit), limit)?;
        prop_assert_eq!(a, b);
    }

    /// Valid files read back exactly, whole or as a prefix, in every encoding.
    #[test]
    fn valid_files_round_trip(
        im in images(),
        lab in labels(),
        enc in encoding(),
        limit in limit(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let p = write(tmp.path(), "i", &encode(&images_bytes(&im), enc));
        prop_assert_eq!(read_idx_images(&p, limit).unwrap(), prefix(&im, limit));
        let p = write(tmp.path(), "l", &encode(&labels_bytes(&lab), enc));
        let n = limit.map_or(lab.len(), |k| k.min(lab.len()));
        prop_assert_eq!(read_idx_labels(&p, limit).unwrap(), lab[..n].to_vec());
    }

    /// Mutated raw files: an error or a consistent result (raw files carry no checksum).
    #[test]
    fn mutated_raw_files_never_panic(
        im in images(),
        lab in labels(),
        mutations in vec(mutation(), 1..4),
        limit in limit(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut bytes = images_bytes(&im);
        let mut lbytes = labels_bytes(&lab);
        for m in &mutations {
            mutate(&mut bytes, m);
            mutate(&mut lbytes, m);
        }
        let p = write(tmp.path(), "i.idx", &bytes);
        check_images(read_idx_images(&p, limit), limit)?;
        check_labels(read_idx_labels(&p, limit), limit)?;
        let p = write(tmp.path(), "l.idx", &lbytes);
        check_images(read_idx_images(&p, limit), limit)?;
        check_labels(read_idx_labels(&p, limit), limit)?;
    }

    /// Mutated valid IDX content, then gzip-compressed: never a panic or an abort.
    #[test]
    fn mutated_content_in_gzip_never_panics(
        im in images(),
        mutations in vec(mutation(), 1..4),
        enc in gzip_encoding(),
        limit in limit(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut bytes = images_bytes(&im);
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        let p = write(tmp.path(), "i.gz", &encode(&bytes, enc));
        check_images(read_idx_images(&p, limit), limit)?;
        check_labels(read_idx_labels(&p, limit), limit)?;
    }

    /// Changed bytes of a gzip file never give different data: the read fails, or (when the
    /// change missed the data, e.g. the header's time stamp) returns exactly the original.
    #[test]
    fn corrupted_gzip_never_yields_different_data(
        im in images(),
        lab in labels(),
        enc in gzip_encoding(),
        mutations in vec(mutation(), 1..3),
        limit in limit(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let z = encode(&images_bytes(&im), enc);
        let mut bad = z.clone();
        for m in &mutations {
            mutate(&mut bad, m);
        }
        prop_assume!(z != bad);
        let p = write(tmp.path(), "i.gz", &bad);
        if let Some(got) = check_images(read_idx_images(&p, limit), limit)? {
            prop_assert_eq!(got, prefix(&im, limit));
        }
        let z = encode(&labels_bytes(&lab), enc);
        let mut bad = z.clone();
        for m in &mutations {
            mutate(&mut bad, m);
        }
        let p = write(tmp.path(), "l.gz", &bad);
        if let Some(got) = check_labels(read_idx_labels(&p, limit), limit)? {
            let n = limit.map_or(lab.len(), |k| k.min(lab.len()));
            prop_assert_eq!(got, lab[..n].to_vec());
        }
    }
}
