//! MNIST from the four standard IDX files (gzip-compressed or raw), pixels scaled to [0, 1].
//!
//! Files, under `<data_dir>/mnist/`: `train-images-idx3-ubyte.gz`, `train-labels-idx1-ubyte.gz`,
//! `t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz`. IDX integers are big-endian;
//! images: magic `0x00000803` (2051), count, rows, cols, then `count·rows·cols` bytes; labels:
//! magic `0x00000801` (2049), count, then `count` bytes in 0..=9. A file starting with the gzip
//! magic `1f 8b` is decompressed with `flate2` (all members of a multi-member file), otherwise it
//! is read as raw IDX.
//!
//! Nothing in a file is trusted before the whole file has been checked: a gzip file is first
//! read to its end once (discarding the data) to verify every member's CRC32 and length, also
//! when only its first images are wanted, and the sizes in an IDX header are compared (with
//! checked arithmetic) with the actual, decompressed length before any memory is allocated.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, ErrorKind, Read};
use std::path::{Path, PathBuf};

use flate2::bufread::DeflateDecoder;
use flate2::read::MultiGzDecoder;

use crate::error::{Error, Result};

/// Magic number of an IDX image file (unsigned bytes, 3 dimensions).
pub const IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX label file (unsigned bytes, 1 dimension).
pub const LABELS_MAGIC: u32 = 0x0000_0801;
/// The first two bytes of a gzip file.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
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
    /// = all). For quick runs. Every file is still checked whole (gzip checksum, length against
    /// its header) before any of it is used, so a corrupt file is an error here too.
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
            let mut scaled = Vec::new();
            scaled
                .try_reserve_exact(images.pixels.len())
                .map_err(|source| Error::Allocation {
                    path: dir.join(img),
                    what: "scaled pixels",
                    bytes: images.pixels.len().saturating_mul(size_of::<f32>()),
                    source,
                })?;
            scaled.extend(images.pixels.iter().map(|&p| f32::from(p) / 255.0));
            Ok(MnistPart {
                images: scaled,
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

/// Opens `path`; "not found" becomes [`Error::MissingFile`].
fn open_file(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| {
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
    })
}

/// The whole file as a buffered reader (its first bytes included), and whether it is gzip.
fn sniff(file: File, path: &Path) -> Result<(impl BufRead, bool)> {
    let mut reader = BufReader::new(file);
    let mut magic = [0u8; 2];
    let got = read_full(&mut reader, &mut magic, path)?;
    let gzip = got == 2 && magic == GZIP_MAGIC;
    Ok((Cursor::new(magic[..got].to_vec()).chain(reader), gzip))
}

/// Opens `path`, transparently decompressing gzip (every member of a multi-member file).
///
/// Used only after [`content_len`] has verified the whole gzip stream.
fn open(path: &Path) -> Result<Box<dyn Read>> {
    let (reader, gzip) = sniff(open_file(path)?, path)?;
    if gzip {
        Ok(Box::new(MultiGzDecoder::new(reader)))
    } else {
        Ok(Box::new(reader))
    }
}

/// The length of the file's content: its size for a raw file; for a gzip file the decompressed
/// length, after the whole stream has been read once (discarding the data) and every member's
/// header, deflate data and trailer (CRC32 and length) have been checked.
///
/// This runs before any of a file's data is used, so that a corrupt file is rejected even when
/// only its first images are read, and header sizes can be checked against the real length
/// before anything is allocated for them.
fn content_len(path: &Path) -> Result<u64> {
    let file = open_file(path)?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    let (mut reader, gzip) = sniff(file, path)?;
    if gzip {
        verify_gzip(&mut reader, path)
    } else if meta.is_file() {
        Ok(meta.len())
    } else {
        std::io::copy(&mut reader, &mut std::io::sink()).map_err(|e| Error::io(path, e))
    }
}

/// [`Error::CorruptGzip`] with `message` as its source.
fn corrupt_gzip(path: &Path, message: String) -> Error {
    Error::CorruptGzip {
        path: path.to_path_buf(),
        source: std::io::Error::new(ErrorKind::InvalidData, message),
    }
}

/// Reads exactly `buf.len()` bytes of gzip framing, hashing them; a short read is corruption.
fn read_frame(
    r: &mut impl BufRead,
    buf: &mut [u8],
    crc: &mut crc32fast::Hasher,
    path: &Path,
    what: &str,
) -> Result<()> {
    let got = read_full(r, buf, path)?;
    if got < buf.len() {
        return Err(corrupt_gzip(
            path,
            format!("the file ends inside {what} (truncated)"),
        ));
    }
    crc.update(buf);
    Ok(())
}

/// Skips a zero-terminated header field (file name or comment) without keeping it, hashing it.
fn skip_zero_terminated(
    r: &mut impl BufRead,
    crc: &mut crc32fast::Hasher,
    path: &Path,
    member: usize,
) -> Result<()> {
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        if avail.is_empty() {
            return Err(corrupt_gzip(
                path,
                format!("the file ends inside the header of gzip member {member} (truncated)"),
            ));
        }
        let (used, done) = match avail.iter().position(|&b| b == 0) {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        crc.update(&avail[..used]);
        r.consume(used);
        if done {
            return Ok(());
        }
    }
}

/// Reads the header of gzip member `member` (RFC 1952 §2.3), checking it and skipping its
/// optional fields.
fn skip_gzip_header(r: &mut impl BufRead, path: &Path, member: usize) -> Result<()> {
    const FHCRC: u8 = 1 << 1;
    const FEXTRA: u8 = 1 << 2;
    const FNAME: u8 = 1 << 3;
    const FCOMMENT: u8 = 1 << 4;
    const FRESERVED: u8 = 0xe0;
    let what = format!("the header of gzip member {member}");
    let mut crc = crc32fast::Hasher::new();
    let mut fixed = [0u8; 10];
    let got = read_full(r, &mut fixed, path)?;
    if got < 2 || fixed[..2] != GZIP_MAGIC {
        return Err(corrupt_gzip(
            path,
            format!(
                "the data after the end of gzip member {} is not another gzip member \
                 (trailing garbage)",
                member.saturating_sub(1)
            ),
        ));
    }
    if got < fixed.len() {
        return Err(corrupt_gzip(
            path,
            format!("the file ends inside {what} (truncated)"),
        ));
    }
    crc.update(&fixed);
    if fixed[2] != 8 {
        return Err(corrupt_gzip(
            path,
            format!(
                "{what} names compression method {}, not 8 (deflate)",
                fixed[2]
            ),
        ));
    }
    let flags = fixed[3];
    if flags & FRESERVED != 0 {
        return Err(corrupt_gzip(
            path,
            format!("{what} has reserved flag bits set ({flags:#04x})"),
        ));
    }
    if flags & FEXTRA != 0 {
        let mut xlen = [0u8; 2];
        read_frame(r, &mut xlen, &mut crc, path, &what)?;
        let mut left = usize::from(u16::from_le_bytes(xlen));
        let mut chunk = [0u8; 256];
        while left > 0 {
            let n = left.min(chunk.len());
            read_frame(r, &mut chunk[..n], &mut crc, path, &what)?;
            left -= n;
        }
    }
    if flags & FNAME != 0 {
        skip_zero_terminated(r, &mut crc, path, member)?;
    }
    if flags & FCOMMENT != 0 {
        skip_zero_terminated(r, &mut crc, path, member)?;
    }
    if flags & FHCRC != 0 {
        let computed = crc.clone().finalize() & 0xffff;
        let mut stored = [0u8; 2];
        read_frame(r, &mut stored, &mut crc, path, &what)?;
        let stored = u32::from(u16::from_le_bytes(stored));
        if stored != computed {
            return Err(corrupt_gzip(
                path,
                format!(
                    "checksum does not match: {what} has CRC16 {computed:#06x}, \
                     but its header checksum field says {stored:#06x}"
                ),
            ));
        }
    }
    Ok(())
}

/// Reads a whole gzip stream (all members), discarding the data, and checks every member's
/// header, deflate data and trailer: the CRC32 and the length (mod 2³²) of the decompressed data.
/// Returns the total decompressed length.
///
/// # Errors
/// [`Error::CorruptGzip`] (for a trailer mismatch its message says that the checksum does not
/// match), [`Error::Io`].
fn verify_gzip(r: &mut impl BufRead, path: &Path) -> Result<u64> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut member = 0usize;
    loop {
        member += 1;
        skip_gzip_header(r, path, member)?;
        let mut crc = crc32fast::Hasher::new();
        let mut len = 0u64;
        {
            // Reads no further than the end of the deflate data, so the trailer comes next.
            let mut inflater = DeflateDecoder::new(&mut *r);
            loop {
                match inflater.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        crc.update(&buf[..n]);
                        len += n as u64;
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                        return Err(corrupt_gzip(
                            path,
                            format!(
                                "the file ends inside the deflate data of gzip member {member} \
                                 (truncated): {e}"
                            ),
                        ))
                    }
                    Err(e)
                        if matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::InvalidData) =>
                    {
                        return Err(corrupt_gzip(path, format!("gzip member {member}: {e}")))
                    }
                    Err(e) => return Err(Error::io(path, e)),
                }
            }
        }
        let mut trailer = [0u8; 8];
        let what = format!("the trailer of gzip member {member}");
        read_frame(r, &mut trailer, &mut crc32fast::Hasher::new(), path, &what)?;
        let [c0, c1, c2, c3, l0, l1, l2, l3] = trailer;
        let stored_crc = u32::from_le_bytes([c0, c1, c2, c3]);
        let stored_len = u32::from_le_bytes([l0, l1, l2, l3]);
        let computed_crc = crc.finalize();
        // The trailer holds the length modulo 2^32, hence the truncating cast.
        if computed_crc != stored_crc || len as u32 != stored_len {
            return Err(corrupt_gzip(
                path,
                format!(
                    "checksum does not match: the decompressed data of gzip member {member} has \
                     CRC32 {computed_crc:#010x} and length {len}, but its trailer says CRC32 \
                     {stored_crc:#010x} and length {stored_len} (mod 2^32); the file is corrupt"
                ),
            ));
        }
        total = total.saturating_add(len);
        let at_end = loop {
            match r.fill_buf() {
                Ok(a) => break a.is_empty(),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, e)),
            }
        };
        if at_end {
            return Ok(total);
        }
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

/// [`Error::InvalidIdx`] unless the header starts with the magic number `want` of a file of
/// `what` (images or labels).
fn check_magic(header: &[u8], want: u32, what: &str, path: &Path) -> Result<()> {
    let magic = be_u32(&header[0..4]);
    if magic == want {
        return Ok(());
    }
    Err(Error::InvalidIdx {
        path: path.to_path_buf(),
        reason: format!(
            "magic number {magic:#010x} ({magic}), expected {want:#010x} ({want}) for {what}"
        ),
    })
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

/// Checks the body length a header announces (`None`: it overflows 64 bits, described by
/// `describe`) against the `available` bytes after the header: [`Error::Truncated`] if fewer,
/// [`Error::InvalidIdx`] for trailing bytes.
fn check_body_len(
    path: &Path,
    what: &'static str,
    announced: Option<u64>,
    available: u64,
    describe: impl FnOnce() -> String,
) -> Result<()> {
    let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    match announced {
        None => Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!(
                "the header announces {}, more than 2^64 bytes of {what}",
                describe()
            ),
        }),
        Some(a) if a > available => Err(Error::Truncated {
            path: path.to_path_buf(),
            what,
            expected: to_usize(a),
            found: to_usize(available),
        }),
        Some(a) if a < available => Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!(
                "{} trailing bytes after the {a} bytes of {what} the header announces ({})",
                available - a,
                describe()
            ),
        }),
        Some(_) => Ok(()),
    }
}

/// A zero-filled buffer of `len` bytes, whose size comes from a file: an allocation failure is
/// an error, not an abort.
fn zeroed(len: u64, path: &Path, what: &'static str) -> Result<Vec<u8>> {
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|source| Error::Allocation {
            path: path.to_path_buf(),
            what,
            bytes: len,
            source,
        })?;
    v.resize(len, 0);
    Ok(v)
}

/// Reads an IDX image file (magic 2051). With `limit = Some(k)` only the first `min(k, count)`
/// images are returned.
///
/// The whole file is checked in any case, before any of it is used: a gzip file is read to its
/// end once and every member's CRC32 and length are verified, and the size the header announces
/// (`count·rows·cols`, with checked arithmetic) must equal the (decompressed) length after the
/// header. Only then is memory allocated for the pixels.
///
/// # Errors
/// [`Error::MissingFile`], [`Error::Io`], [`Error::CorruptGzip`] (a checksum mismatch says so);
/// [`Error::InvalidIdx`] for a wrong magic number, zero image dimensions or trailing bytes;
/// [`Error::Truncated`] if the file is shorter than its header announces; [`Error::Allocation`]
/// if the pixels do not fit in memory.
pub fn read_idx_images(path: &Path, limit: Option<usize>) -> Result<IdxImages> {
    let content = content_len(path)?;
    let mut r = open(path)?;
    let mut header = [0u8; 16];
    let got = read_header(&mut r, &mut header, path)?;
    check_magic(&header, IMAGES_MAGIC, "images", path)?;
    truncated_header(got, header.len(), path)?;
    let count = be_u32(&header[4..8]);
    let rows = be_u32(&header[8..12]);
    let cols = be_u32(&header[12..16]);
    if rows == 0 || cols == 0 {
        return Err(Error::InvalidIdx {
            path: path.to_path_buf(),
            reason: format!("image size {rows}×{cols} has a zero dimension"),
        });
    }
    // Both factors are below 2^32, so this cannot overflow.
    let per_image = u64::from(rows) * u64::from(cols);
    check_body_len(
        path,
        "pixels",
        u64::from(count).checked_mul(per_image),
        content.saturating_sub(16),
        || format!("{count} images of {rows}×{cols} pixels"),
    )?;
    let take = limit.map_or(count, |k| u32::try_from(k).unwrap_or(u32::MAX).min(count));
    // At most the announced size, which fits in the file.
    let mut pixels = zeroed(u64::from(take) * per_image, path, "pixels")?;
    read_exact(&mut r, &mut pixels, path, "pixels")?;
    if take == count {
        expect_end(&mut r, path)?;
    }
    Ok(IdxImages {
        count: take as usize,
        rows: rows as usize,
        cols: cols as usize,
        pixels,
    })
}

/// Reads an IDX label file (magic 2049), checking every label read is in 0..=9. With
/// `limit = Some(k)` only the first `min(k, count)` labels are returned.
///
/// The whole file is checked first, as for [`read_idx_images`] (gzip CRC32 and length; `count`
/// against the file's length).
///
/// # Errors
/// As [`read_idx_images`], plus [`Error::InvalidIdx`] for a label above 9.
pub fn read_idx_labels(path: &Path, limit: Option<usize>) -> Result<Vec<u8>> {
    let content = content_len(path)?;
    let mut r = open(path)?;
    let mut header = [0u8; 8];
    let got = read_header(&mut r, &mut header, path)?;
    check_magic(&header, LABELS_MAGIC, "labels", path)?;
    truncated_header(got, header.len(), path)?;
    let count = be_u32(&header[4..8]);
    check_body_len(
        path,
        "labels",
        Some(u64::from(count)),
        content.saturating_sub(8),
        || format!("{count} labels"),
    )?;
    let take = limit.map_or(count, |k| u32::try_from(k).unwrap_or(u32::MAX).min(count));
    let mut labels = zeroed(u64::from(take), path, "labels")?;
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
mod tests;
