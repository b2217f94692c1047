// Where the data folder is. Standard library only: `build.rs` includes this file too, so that the
// tests are compiled against the same folder the library finds at run time.
// (Plain `//` comments: an included file may not hold inner doc comments.)

use std::path::{Path, PathBuf};

/// Environment variable naming the data folder; it overrides every other location.
pub const DATA_DIR_ENV: &str = "SMI_DATA_DIR";

/// The per-user data folder: `$XDG_DATA_HOME/smi`, else `$HOME/.local/share/smi`, else (Windows)
/// `%LOCALAPPDATA%\smi`; `None` when none of these variables is set. `smi data fetch` writes here
/// unless told otherwise. The folder need not exist.
pub fn user_data_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(x) = var("XDG_DATA_HOME") {
        return Some(PathBuf::from(x).join("smi"));
    }
    if let Some(h) = var("HOME") {
        return Some(PathBuf::from(h).join(".local").join("share").join("smi"));
    }
    var("LOCALAPPDATA").map(|a| PathBuf::from(a).join("smi"))
}

/// The repository's sibling `shared/data` (the layout of this project's CI), located from the
/// source tree this crate was compiled from, never from the current directory.
pub fn repo_data_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `<repo>/crates/<crate>` → `<repo>/..`; fall back to the manifest folder itself should the
    // tree be shallower (never the current directory).
    let parent = manifest
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .unwrap_or(manifest);
    parent.join("shared").join("data")
}

/// The data folder, first match wins:
/// 1. `$SMI_DATA_DIR` if set and non-empty (used even if it does not exist, so that a mistyped
///    value is reported rather than passed over);
/// 2. the per-user folder ([`user_data_dir`]) if it exists;
/// 3. the repository's sibling `shared/data` ([`repo_data_dir`]) if it exists;
/// 4. else the per-user folder (where `smi data fetch` puts the files), or the repository's
///    `shared/data` when no per-user folder is known.
///
/// A command-line `--data-dir` comes before all of these; it is the caller's to apply.
pub fn default_data_dir() -> PathBuf {
    if let Some(v) = std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(v);
    }
    let user = user_data_dir();
    if let Some(u) = user.as_ref().filter(|u| u.is_dir()) {
        return u.clone();
    }
    let repo = repo_data_dir();
    if repo.is_dir() {
        return repo;
    }
    user.unwrap_or(repo)
}
