//! Checking files against the catalog's SHA-256 and putting downloaded files in place atomically.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::DataFile;
use crate::error::{Error, Result};

/// The largest file [`install_verified`] writes (64 MiB; the largest data file is 9.9 MB).
pub const MAX_DOWNLOAD_BYTES: u64 = 64 << 20;

/// Lower-case hex of a digest.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads `reader` to its end (at most `limit` bytes plus one), writing what it reads to `sink`;
/// gives the byte count and the SHA-256 (lower-case hex).
fn copy_hashed(
    reader: &mut dyn Read,
    sink: &mut dyn Write,
    limit: u64,
) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut n = 0u64;
    let mut limited = reader.take(limit.saturating_add(1));
    loop {
        let k = match limited.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..k]);
        sink.write_all(&buf[..k])?;
        n += k as u64;
    }
    Ok((n, hex(&hasher.finalize())))
}

/// SHA-256 (lower-case hex) of the file at `path`.
pub fn sha256_file(path: &Path) -> Result<String> {
    let io_err = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = File::open(path).map_err(io_err)?;
    copy_hashed(&mut f, &mut io::sink(), u64::MAX)
        .map(|(_, h)| h)
        .map_err(io_err)
}

/// What [`verify_file`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileStatus {
    /// No file at that path.
    Missing,
    /// The file is there with an accepted checksum.
    Ok,
    /// The file is there with another checksum (given).
    Mismatch(String),
}

/// Checks `file` under the data folder `dir`.
pub fn verify_file(dir: &Path, file: &DataFile) -> Result<FileStatus> {
    let path = dir.join(&file.path);
    if !path.is_file() {
        return Ok(FileStatus::Missing);
    }
    let found = sha256_file(&path)?;
    Ok(if file.accepts(&found) {
        FileStatus::Ok
    } else {
        FileStatus::Mismatch(found)
    })
}

/// Removes the temporary files `.<name>.part-<pid>` in `dir` that a download killed before it
/// could clean up left behind (Ctrl-C, a kill): those of processes that no longer run (where
/// `/proc` says so), else those untouched for a day. Best effort: a file that cannot be read or
/// removed stays.
fn remove_stale_parts(dir: &Path, name: &str) {
    let prefix = format!(".{name}.part-");
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let proc_fs = Path::new("/proc/self").exists();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let stale = if proc_fs {
            !Path::new("/proc").join(pid.to_string()).exists()
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 24 * 3600)
        };
        if stale {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Removes the temporary file on every way out but the successful rename.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = fs::remove_file(p);
        }
    }
}

/// Writes what `reader` yields to `<dir>/<file.path>`, atomically: into a temporary file beside
/// it, checked against the catalog's SHA-256 ([`DataFile::accepts`]), synced, then renamed into
/// place. On any failure (read error, more than [`MAX_DOWNLOAD_BYTES`], checksum mismatch) the
/// temporary file is removed and an existing file at the destination is left untouched.
/// Creates the parent folders. Gives the number of bytes written.
pub fn install_verified(reader: &mut dyn Read, dir: &Path, file: &DataFile) -> Result<u64> {
    let dest = dir.join(&file.path);
    let io_at = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let parent = dest.parent().unwrap_or(dir);
    fs::create_dir_all(parent).map_err(io_at(parent))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    remove_stale_parts(parent, &name);
    let tmp_path = parent.join(format!(".{name}.part-{}", std::process::id()));
    let mut out = File::create(&tmp_path).map_err(io_at(&tmp_path))?;
    let mut tmp = TempFile(Some(tmp_path.clone()));
    let (n, found) = copy_hashed(reader, &mut out, MAX_DOWNLOAD_BYTES).map_err(io_at(&tmp_path))?;
    if n > MAX_DOWNLOAD_BYTES {
        return Err(Error::TooLarge {
            path: dest,
            limit: MAX_DOWNLOAD_BYTES,
        });
    }
    if !file.accepts(&found) {
        return Err(Error::ChecksumMismatch {
            path: dest,
            expected: file.sha256.clone(),
            found,
        });
    }
    out.sync_all().map_err(io_at(&tmp_path))?;
    drop(out);
    fs::rename(&tmp_path, &dest).map_err(io_at(&dest))?;
    tmp.0 = None;
    Ok(n)
}
