//! MNIST from the four standard IDX files (gzip-compressed or raw), pixels scaled to [0, 1].
//!
//! Files, under `<data_dir>/mnist/`: `train-images-idx3-ubyte.gz`, `train-labels-idx1-ubyte.gz`,
//! `t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz`. IDX integers are big-endian;
//! images: magic `0x00000803` (2051), count, rows, cols, then `count·rows·cols` bytes; labels:
//! magic `0x00000801` (2049), count, then `count` bytes in 0..=9. A file starting with the gzip
//! magic `1f 8b` is decompressed with `flate2`, otherwise it is read as raw IDX.

use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;

use crate::error::{Error, Result};

/// Magic number of an IDX image file (unsigned bytes, 3 dimensions).
pub const IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX label file (unsigned bytes, 1 dimension).
pub const LABELS_MAGIC: u32 = 0x0000_0801;
/// Number of classes.
pub const NUM_CLASSES: usize = 10;
/// Standard training-set size.
pub const TRAIN_SIZE: usize = 60_000;
/// Standard test-set size.
pub const TEST_SIZE: usize = 10_000;

/// The raw contents of an IDX image file (possibly only its first images).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxImages {
    /// Number of images read.
    pub count: usize,
    /// Image height.
    pub rows: usize,
    /// Image width.
    pub cols: usize,
    /// `count·rows·cols` pixels, image after image, row-major, 0..=255.
    pub pixels: Vec<u8>,
}

/// One part of MNIST (train or test): flattened images and labels.
#[derive(Clone, Debug, PartialEq)]
pub struct MnistPart {
    /// `len × pixels_per_image` values in [0, 1] (raw byte / 255), row-major: image `i` is
    /// `images[i·784 .. (i+1)·784]`.
    pub images: Vec<f32>,
    /// Labels in 0..=9, one per image.
    pub labels: Vec<u8>,
    /// Pixels per image (784 = 28·28).
    pub pixels_per_image: usize,
}

impl MnistPart {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no images.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Image `i` as a flat slice of `pixels_per_image` values (`None` if out of range).
    pub fn image(&self, i: usize) -> Option<&[f32]> {
        let p = self.pixels_per_image;
        if i < self.len() {
            self.images.get(i * p..(i + 1) * p)
        } else {
            None
        }
    }

    /// The images converted to `f64` (same layout).
    pub fn images_f64(&self) -> Vec<f64> {
        self.images.iter().map(|&v| f64::from(v)).collect()
    }

    /// How many images carry each label 0..=9.
    pub fn label_histogram(&self) -> [usize; NUM_CLASSES] {
        let mut h = [0usize; NUM_CLASSES];
        for &l in &self.labels {
            if let Some(c) = h.get_mut(usize::from(l)) {
                *c += 1;
            }
        }
        h
    }
}

/// MNIST: the standard 60 000 training and 10 000 test images.
#[derive(Clone, Debug, PartialEq)]
pub struct Mnist {
    /// The `train-*` files.
    pub train: MnistPart,
    /// The `t10k-*` files.
    pub test: MnistPart,
}

/// The four file names, in the order train images, train labels, test images, test labels.
pub const FILES: [&str; 4] = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
];

impl Mnist {
    /// Loads all of MNIST from `<data_dir>/mnist/` (or from `data_dir` itself if the files lie
    /// there directly).
    ///
    /// # Errors
    /// [`Error::MissingFile`] naming the directories searched; the errors of [`read_idx_images`]
    /// and [`read_idx_labels`]; [`Error::Inconsistent`] if image and label counts differ.
    pub fn load(data_dir: &Path) -> Result<Self> {
        Self::load_subset(data_dir, None, None)
    }

    /// Like [`Mnist::load`] but keeps only the first `train` / `test` images of each part (`None`
    /// = all), reading no further than needed. For quick runs.
    ///
    /// # Errors
    /// As [`Mnist::load`].
    pub fn load_subset(data_dir: &Path, train: Option<usize>, test: Option<usize>) -> Result<Self> {
        let dir = mnist_dir(data_dir)?;
        let part = |img: &str, lab: &str, limit: Option<usize>| -> Result<MnistPart> {
            let images = read_idx_images(&dir.join(img), limit)?;
            let labels = read_idx_labels(&dir.join(lab), limit)?;
            if images.count != labels.len() {
                return Err(Error::Inconsistent {
                    reason: format!(
                        "{img} has {} images but {lab} has {} labels",
                        images.count,
                        labels.len()
                    ),
                });
            }
            Ok(MnistPart {
                images: images
                    .pixels
                    .iter()
                    .map(|&p| f32::from(p) / 255.0)
                    .collect(),
                labels,
                pixels_per_image: images.rows * images.cols,
            })
        };
        Ok(Mnist {
            train: part(FILES[0], FILES[1], train)?,
            test: part(FILES[2], FILES[3], test)?,
        })
    }
}

/// Finds the directory holding the four files.
fn mnist_dir(data_dir: &Path) -> Result<PathBuf> {
    let candidates = [data_dir.join("mnist"), data_dir.to_path_buf()];
    for c in &candidates {
        if FILES.iter().all(|f| c.join(f).is_file()) {
            return Ok(c.clone());
        }
    }
    let missing = FILES
        .iter()
        .find(|f| !candidates[0].join(f).is_file())
        .copied()
        .unwrap_or(FILES[0]);
    Err(Error::MissingFile {
        dataset: "mnist".to_string(),
        file: missing.to_string(),
        searched: candidates.to_vec(),
    })
}

/// Opens `path`, transparently decompressing gzip.
fn open(path: &Path) -> Result<Box<dyn Read>> {
    let file = File::open(path).map_err(|e| {
        if e.kind() == ErrorKind::NotFound {
            Error::MissingFile {
                dataset: "mnist".to_string(),
                file: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                searched: path.parent().map(Path::to_path_buf).into_iter().collect(),
            }
        } else {
            Error::io(path, e)
        }
    })?;
    let mut reader = BufReader::new(file);
    let mut magic = [0u8; 2];
    let got = read_full(&mut reader, &mut magic, path)?;
    let head = std::io::Cursor::new(magic[..got].to_vec());
    let chained = head.chain(reader);
    if got == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(GzDecoder::new(chained)))
    } else {
        Ok(Box::new(chained))
    }
}

/// Reads until `buf` is full or EOF; returns the number of bytes read. Decoder failures become
/// [`Error::CorruptGzip`].
fn read_full(reader: &mut dyn Read, buf: &mut [u8], path: &Path) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(k) => filled += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::InvalidData | ErrorKind::InvalidInput | ErrorKind::UnexpectedEof
                ) =>
            {
                return Err(Error::CorruptGzip {
                    path: path.to_path_buf(),
                    source: e,
                })
            }
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(filled)
}

/// Reads exactly `buf.len()` bytes or fails with [`Error::Truncated`].
fn read_exact(
    reader: &mut dyn Read,
    buf: &mut [u8],
    path: &Path,
    what: &'static str,
) -> Result<()> {
    let got = read_full(reader, buf, path)?;
    if got < buf.len() {
        return Err(Error::Truncated {
            path: path.to_path_buf(),
            what,
            expected: buf.len(),
            found: got,
        });
    }
    Ok(())
}

/// After a full read: the stream must end here (this also makes the gzip decoder verify its
/// CRC and length trailer).
fn expect_end(reader: &mut dyn Read, path: &Path) -> Result<()> {
    let mut probe = [0u8; 1];
    if read_full(reader, &mut probe, path)? != 0 {
        return Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: "trailing bytes after the data the header announces".to_string(),
        });
    }
    Ok(())
}

/// Reads up to `header.len()` bytes; fails with [`Error::Truncated`] only if not even the 4-byte
/// magic number is there (so a wrong magic is reported before a short header).
fn read_header(reader: &mut dyn Read, header: &mut [u8], path: &Path) -> Result<usize> {
    let got = read_full(reader, header, path)?;
    if got < 4 {
        return Err(Error::Truncated {
            path: path.to_path_buf(),
            what: "header",
            expected: header.len(),
            found: got,
        });
    }
    Ok(got)
}

/// [`Error::Truncated`] if the header has `got < want` bytes.
fn truncated_header(got: usize, want: usize, path: &Path) -> Result<()> {
    if got < want {
        return Err(Error::Truncated {
            path: path.to_path_buf(),
            what: "header",
            expected: want,
            found: got,
        });
    }
    Ok(())
}

fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_be_bytes(a)
}

/// Reads an IDX image file (magic 2051). With `limit = Some(k)` only the first `min(k, count)`
/// images are read and the rest of the file is not checked.
///
/// # Errors
/// [`Error::MissingFile`], [`Error::Io`], [`Error::CorruptGzip`]; [`Error::InvalidIdx`] for a
/// wrong magic number, zero image dimensions or trailing bytes; [`Error::Truncated`] if the file
/// ends early.
pub fn read_idx_images(path: &Path, limit: Option<usize>) -> Result<IdxImages> {
    let mut r = open(path)?;
    let mut header = [0u8; 16];
    let got = read_header(&mut r, &mut header, path)?;
    let magic = be_u32(&header[0..4]);
    if magic != IMAGES_MAGIC {
        return Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!(
                "magic number {magic:#010x} ({magic}), expected {IMAGES_MAGIC:#010x} (2051) for images"
            ),
        });
    }
    truncated_header(got, header.len(), path)?;
    let count = be_u32(&header[4..8]) as usize;
    let rows = be_u32(&header[8..12]) as usize;
    let cols = be_u32(&header[12..16]) as usize;
    if rows == 0 || cols == 0 {
        return Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!("image size {rows}×{cols} has a zero dimension"),
        });
    }
    let take = limit.map_or(count, |k| k.min(count));
    let len = take
        .checked_mul(rows)
        .and_then(|v| v.checked_mul(cols))
        .ok_or_else(|| Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!("{take}×{rows}×{cols} pixels overflow"),
        })?;
    let mut pixels = vec![0u8; len];
    read_exact(&mut r, &mut pixels, path, "pixels")?;
    if take == count {
        expect_end(&mut r, path)?;
    }
    Ok(IdxImages {
        count: take,
        rows,
        cols,
        pixels,
    })
}

/// Reads an IDX label file (magic 2049), checking every label is in 0..=9. With
/// `limit = Some(k)` only the first `min(k, count)` labels are read.
///
/// # Errors
/// As [`read_idx_images`], plus [`Error::InvalidIdx`] for a label above 9.
pub fn read_idx_labels(path: &Path, limit: Option<usize>) -> Result<Vec<u8>> {
    let mut r = open(path)?;
    let mut header = [0u8; 8];
    let got = read_header(&mut r, &mut header, path)?;
    let magic = be_u32(&header[0..4]);
    if magic != LABELS_MAGIC {
        return Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!(
                "magic number {magic:#010x} ({magic}), expected {LABELS_MAGIC:#010x} (2049) for labels"
            ),
        });
    }
    truncated_header(got, header.len(), path)?;
    let count = be_u32(&header[4..8]) as usize;
    let take = limit.map_or(count, |k| k.min(count));
    let mut labels = vec![0u8; take];
    read_exact(&mut r, &mut labels, path, "labels")?;
    if take == count {
        expect_end(&mut r, path)?;
    }
    if let Some((i, &l)) = labels
        .iter()
        .enumerate()
        .find(|(_, &l)| usize::from(l) >= NUM_CLASSES)
    {
        return Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!("label {l} at position {i} is not in 0..=9"),
        });
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
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
}
