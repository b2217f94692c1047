//! Files written whole or not at all: a temporary file in the same folder, then a rename.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically: a temporary file of a name unique to this process and
/// call (`.<name>.<pid>.<n>.tmp` in the same folder), then a rename over `path`. Concurrent
/// writers never share a temporary file; the last rename wins.
///
/// # Errors
/// The I/O error of writing or renaming (the temporary file is removed then).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, bytes, false)
}

/// [`write_atomic`], with the temporary file synced to disk before the rename (for files a
/// crash must not leave empty, such as saved models).
///
/// # Errors
/// As [`write_atomic`].
pub fn write_atomic_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, bytes, true)
}

fn write_atomic_with(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |s| s.to_string_lossy());
    let tmp = path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, bytes)?;
        if sync {
            f.sync_all()?;
        }
        Ok(())
    };
    let result = write().and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_use_distinct_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let p = &p;
                s.spawn(move || {
                    for _ in 0..50 {
                        write_atomic(p, &[t; 1000]).unwrap();
                    }
                });
            }
        });
        let b = std::fs::read(&p).unwrap();
        assert_eq!(b.len(), 1000);
        assert!(b.iter().all(|&x| x == b[0]));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
