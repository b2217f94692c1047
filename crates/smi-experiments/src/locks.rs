//! Advisory per-unit locks, so that several runs sharing one output folder (sharded cluster
//! jobs, or the same command started twice) split the work instead of repeating it.
//!
//! A unit's lock is the file `<out>/locks/<name>-<hash of key>.lock`, held with an exclusive
//! [`File::try_lock`] while the unit runs and released when the [`UnitLock`] is dropped (or the
//! process ends, however it ends). A unit whose lock another process holds is skipped by this
//! one. The lock files stay behind (deleting a lock file while another process may hold or be
//! about to take it would let two processes hold "the" lock); `<out>/locks/` may be deleted when
//! no run uses the folder. A holder writes its process id and the unit key into the file, for
//! people looking at a stuck folder.
//!
//! On a file system without file locks (e.g. Lustre mounted without `flock`) locking reports
//! "unsupported": runs then go on unlocked, as before locks existed, with one warning.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{Context, Result};

/// A held unit lock; dropping it releases the lock.
#[derive(Debug)]
pub struct UnitLock {
    _file: File,
    path: PathBuf,
}

impl UnitLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The lock file of the unit `key` (any string; `name` is a readable prefix of the file name).
pub fn lock_path(out: &Path, name: &str, key: &str) -> PathBuf {
    let readable: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(80)
        .collect();
    out.join("locks")
        .join(format!("{readable}-{:016x}.lock", fnv1a(key.as_bytes())))
}

/// FNV-1a, 64 bits: a hash that is the same in every build and process.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn open(out: &Path, name: &str, key: &str) -> Result<(File, PathBuf)> {
    let path = lock_path(out, name, key);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    Ok((file, path))
}

fn held(mut file: File, path: PathBuf, key: &str) -> UnitLock {
    // Who holds it, for a person looking at the folder (best effort).
    let _ = file
        .set_len(0)
        .and_then(|()| writeln!(file, "pid {}\nkey {key}", std::process::id()));
    UnitLock { _file: file, path }
}

/// Whether `e` says that the file system has no file locks; warns once (per process) when so.
pub(crate) fn unsupported(e: &std::io::Error, path: &Path) -> bool {
    static WARNED: Once = Once::new();
    let yes = e.kind() == std::io::ErrorKind::Unsupported;
    if yes {
        WARNED.call_once(|| {
            eprintln!(
                "warning: the file system of {} has no file locks ({e}); going on without them: \
                 runs sharing this output folder may repeat each other's units",
                path.display()
            );
        });
    }
    yes
}

/// Takes the lock of unit `key` without waiting: `None` when another process (or another open
/// of the same file in this process) holds it.
///
/// # Errors
/// The lock folder or file cannot be created, or locking fails for another reason than
/// contention.
pub fn try_lock(out: &Path, name: &str, key: &str) -> Result<Option<UnitLock>> {
    let (file, path) = open(out, name, key)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(held(file, path, key))),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) if unsupported(&e, &path) => Ok(Some(held(file, path, key))),
        Err(TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// Takes the lock of unit `key`, waiting while another process holds it.
///
/// # Errors
/// As [`try_lock`].
pub fn lock(out: &Path, name: &str, key: &str) -> Result<UnitLock> {
    let (file, path) = open(out, name, key)?;
    match file.lock() {
        Err(e) if !unsupported(&e, &path) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
        _ => Ok(held(file, path, key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_busy_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let a = try_lock(out, "uci yacht/0|smi", "k1").unwrap().unwrap();
        assert!(a.path().starts_with(out.join("locks")));
        let name = a.path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with("uci-yacht-0-smi-"), "{name}");
        assert!(try_lock(out, "uci yacht/0|smi", "k1").unwrap().is_none());
        // Another key is another lock, whatever the readable name.
        let b = try_lock(out, "uci yacht/0|smi", "k2").unwrap();
        assert!(b.is_some());
        drop(a);
        assert!(try_lock(out, "uci yacht/0|smi", "k1").unwrap().is_some());
        let text = std::fs::read_to_string(lock_path(out, "uci yacht/0|smi", "k2")).unwrap();
        assert!(text.contains("key k2"), "{text}");
    }

    #[test]
    fn blocking_lock_waits_for_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let a = lock(out, "tune", "k").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _b = lock(out, "tune", "k").unwrap();
                tx.send(()).unwrap();
            });
            std::thread::sleep(std::time::Duration::from_millis(100));
            assert!(rx.try_recv().is_err(), "the second lock must wait");
            drop(a);
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        });
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
