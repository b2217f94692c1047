//! Unit tests of the IDX and gzip readers.

use super::*;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write;

fn images_bytes(count: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&IMAGES_MAGIC.to_be_bytes());
    v.extend_from_slice(&count.to_be_bytes());
    v.extend_from_slice(&rows.to_be_bytes());
    v.extend_from_slice(&cols.to_be_bytes());
    v.extend_from_slice(pixels);
    v
}

fn labels_bytes(labels: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&LABELS_MAGIC.to_be_bytes());
    v.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    v.extend_from_slice(labels);
    v
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn reads_raw_and_gzip_and_subsets() {
    let tmp = tempfile::tempdir().unwrap();
    let px: Vec<u8> = (0..12).map(|i| (i * 20) as u8).collect();
    let raw = images_bytes(3, 2, 2, &px);
    std::fs::write(tmp.path().join("a.idx"), &raw).unwrap();
    std::fs::write(tmp.path().join("a.gz"), gz(&raw)).unwrap();
    for name in ["a.idx", "a.gz"] {
        let im = read_idx_images(&tmp.path().join(name), None).unwrap();
        assert_eq!((im.count, im.rows, im.cols), (3, 2, 2));
        assert_eq!(im.pixels, px);
        let sub = read_idx_images(&tmp.path().join(name), Some(2)).unwrap();
        assert_eq!(sub.count, 2);
        assert_eq!(sub.pixels, px[..8].to_vec());
    }
}

#[test]
fn full_load_from_a_small_fake_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("mnist");
    std::fs::create_dir(&d).unwrap();
    let px = [0u8, 255, 51, 102];
    std::fs::write(d.join(FILES[0]), gz(&images_bytes(1, 2, 2, &px))).unwrap();
    std::fs::write(d.join(FILES[1]), gz(&labels_bytes(&[7]))).unwrap();
    std::fs::write(d.join(FILES[2]), gz(&images_bytes(2, 2, 2, &[0; 8]))).unwrap();
    std::fs::write(d.join(FILES[3]), gz(&labels_bytes(&[1, 9]))).unwrap();
    let m = Mnist::load(tmp.path()).unwrap();
    assert_eq!(m.train.image(0), Some(&[0.0f32, 1.0, 0.2, 0.4][..]));
    assert_eq!(m.test.len(), 2);
    assert_eq!(m.test.label_histogram()[9], 1);
    // Count mismatch.
    std::fs::write(d.join(FILES[3]), gz(&labels_bytes(&[1]))).unwrap();
    assert!(matches!(
        Mnist::load(tmp.path()),
        Err(Error::Inconsistent { .. })
    ));
    // Missing file names the data set and directories.
    std::fs::remove_file(d.join(FILES[0])).unwrap();
    let msg = Mnist::load(tmp.path()).unwrap_err().to_string();
    assert!(msg.contains("mnist") && msg.contains(FILES[0]), "{msg}");
}

#[test]
fn truncated_files_are_errors_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let raw = images_bytes(3, 2, 2, &[1u8; 12]);
    let p = tmp.path().join("short.gz");
    std::fs::write(&p, gz(&raw[..raw.len() - 3])).unwrap();
    let err = read_idx_images(&p, None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Truncated {
                expected: 12,
                found: 9,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("short.gz"));
    // Header cut short.
    std::fs::write(&p, &raw[..10]).unwrap();
    assert!(matches!(
        read_idx_images(&p, None),
        Err(Error::Truncated { what: "header", .. })
    ));
    // A gzip stream cut in the middle.
    let z = gz(&raw);
    std::fs::write(&p, &z[..z.len() / 2]).unwrap();
    let err = read_idx_images(&p, None).unwrap_err();
    assert!(
        matches!(err, Error::Truncated { .. } | Error::CorruptGzip { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("short.gz"));
}

#[test]
fn corrupt_files_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("bad.gz");
    // Wrong magic: labels file read as images.
    std::fs::write(&p, gz(&labels_bytes(&[1, 2, 3]))).unwrap();
    let err = read_idx_images(&p, None).unwrap_err().to_string();
    assert!(err.contains("bad.gz") && err.contains("2051"), "{err}");
    let err = read_idx_labels(&p, None);
    assert_eq!(err.unwrap(), vec![1, 2, 3]);
    // Label out of range.
    std::fs::write(&p, labels_bytes(&[1, 12])).unwrap();
    assert!(matches!(
        read_idx_labels(&p, None),
        Err(Error::InvalidIdx { .. })
    ));
    // Trailing garbage.
    let mut raw = labels_bytes(&[1]);
    raw.push(0);
    std::fs::write(&p, raw).unwrap();
    assert!(matches!(
        read_idx_labels(&p, None),
        Err(Error::InvalidIdx { .. })
    ));
    // Bit-flipped deflate stream / checksum.
    let mut z = gz(&images_bytes(4, 4, 4, &[7u8; 64]));
    let n = z.len();
    z[n - 6] ^= 0xff; // inside the CRC32 trailer
    std::fs::write(&p, &z).unwrap();
    let err = read_idx_images(&p, None).unwrap_err();
    assert!(matches!(err, Error::CorruptGzip { .. }), "{err}");
    // Zero dimension.
    std::fs::write(&p, images_bytes(1, 0, 2, &[])).unwrap();
    assert!(matches!(
        read_idx_images(&p, None),
        Err(Error::InvalidIdx { .. })
    ));
}

/// `raw` gzip-compressed with every optional header field (extra, name, comment, header CRC).
fn gz_all_header_fields(raw: &[u8]) -> Vec<u8> {
    let mut e = flate2::GzBuilder::new()
        .extra(vec![1u8, 2, 3, 0, 4])
        .filename("train-images-idx3-ubyte")
        .comment("a comment")
        .mtime(12345)
        .write(Vec::new(), Compression::best());
    e.write_all(raw).unwrap();
    let mut z = e.finish().unwrap();
    // flate2 does not write FHCRC: add it (CRC32 of the header so far, low 16 bits).
    let header_end = 10 + 2 + 5 + "train-images-idx3-ubyte".len() + 1 + "a comment".len() + 1;
    z[3] |= 1 << 1;
    let crc16 = (crc32fast::hash(&z[..header_end]) & 0xffff) as u16;
    z.splice(header_end..header_end, crc16.to_le_bytes());
    z
}

#[test]
fn gzip_header_fields_and_multiple_members_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let px: Vec<u8> = (0..48).map(|i| (i * 5) as u8).collect();
    let raw = images_bytes(3, 4, 4, &px);
    let p = tmp.path().join("h.gz");
    let z = gz_all_header_fields(&raw);
    std::fs::write(&p, &z).unwrap();
    assert_eq!(content_len(&p).unwrap(), raw.len() as u64);
    assert_eq!(read_idx_images(&p, None).unwrap().pixels, px);
    // The header checksum is checked.
    let mut bad = z.clone();
    bad[20] ^= 1; // inside the file name
    std::fs::write(&p, &bad).unwrap();
    let msg = read_idx_images(&p, Some(1)).unwrap_err().to_string();
    assert!(
        msg.contains("checksum does not match") && msg.contains("h.gz"),
        "{msg}"
    );
    // Three members (as `cat a.gz b.gz c.gz` or pigz write), one of them empty.
    let mut multi = gz(&raw[..20]);
    multi.extend(gz(&[]));
    multi.extend(gz_all_header_fields(&raw[20..]));
    std::fs::write(&p, &multi).unwrap();
    assert_eq!(content_len(&p).unwrap(), raw.len() as u64);
    assert_eq!(read_idx_images(&p, None).unwrap().pixels, px);
    assert_eq!(
        read_idx_images(&p, Some(1)).unwrap().pixels,
        px[..16].to_vec()
    );
    // A corrupt last member is found on a prefix read that never reaches it.
    let mut bad = multi.clone();
    let n = bad.len();
    bad[n - 5] ^= 0x10; // inside the last member's CRC32
    std::fs::write(&p, &bad).unwrap();
    let msg = read_idx_images(&p, Some(1)).unwrap_err().to_string();
    assert!(
        msg.contains("gzip member 3") && msg.contains("checksum does not match"),
        "{msg}"
    );
    // Junk after the last member.
    let mut junk = multi;
    junk.extend_from_slice(&[0, 0, 0, 0]);
    std::fs::write(&p, &junk).unwrap();
    let msg = read_idx_images(&p, Some(1)).unwrap_err().to_string();
    assert!(msg.contains("trailing garbage"), "{msg}");
}

#[test]
fn damaged_gzip_framing_is_reported_as_corrupt_gzip() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("d.gz");
    let raw = labels_bytes(&[1, 2, 3]);
    let z = gz(&raw);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (z[..5].to_vec(), "ends inside the header"),
        (z[..z.len() - 3].to_vec(), "ends inside the trailer"),
        (z[..14].to_vec(), "ends inside the deflate data"),
        (
            {
                let mut b = z.clone();
                b[2] = 7;
                b
            },
            "compression method 7",
        ),
        (
            {
                let mut b = z.clone();
                b[3] = 0x80;
                b
            },
            "reserved flag bits",
        ),
        (
            {
                let mut b = z.clone();
                b[3] = 1 << 3;
                b.truncate(12);
                b
            },
            "ends inside the header",
        ),
        (
            {
                let mut b = z.clone();
                let n = b.len();
                b[n - 1] ^= 1;
                b
            },
            "checksum does not match",
        ),
    ];
    for (bytes, want) in cases {
        std::fs::write(&p, &bytes).unwrap();
        for limit in [None, Some(1)] {
            let err = read_idx_labels(&p, limit).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, Error::CorruptGzip { .. }), "{want}: {msg}");
            assert!(msg.contains(want) && msg.contains("d.gz"), "{want}: {msg}");
        }
    }
}
