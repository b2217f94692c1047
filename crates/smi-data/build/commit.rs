// The git commit a binary was built from, for the provenance of experiment records. Included by
// `build.rs` (plain `//` comments: an included file may not hold inner doc comments).

use std::path::Path;
use std::process::Command;

/// The variable the records read with `env!`.
pub const COMMIT_ENV: &str = "SMI_GIT_COMMIT";

/// Runs `git args…` in `root`; its trimmed stdout when it succeeds.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The paths the Rust binaries are built from: the workspace manifests and every crate but the
/// Python one (whose tests leave files in its folder).
fn sources(root: &Path) -> Vec<String> {
    let mut paths = vec!["Cargo.toml".to_string(), "Cargo.lock".to_string()];
    if let Ok(entries) = std::fs::read_dir(root.join("crates")) {
        let mut crates: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name != "smi-py")
            .map(|name| format!("crates/{name}"))
            .collect();
        crates.sort();
        paths.extend(crates);
    }
    paths
}

/// Sets `SMI_GIT_COMMIT` for the package being built: the full hash of the checked-out commit
/// of the workspace at `root`, with `+dirty` when tracked files of the Rust crates or the
/// workspace manifests differ from it, or `unknown` outside a git checkout (a source tarball).
/// Reruns when the checkout moves (HEAD, its branch, the index) or a file of those crates
/// changes, so the value is that of the sources the binary was compiled from.
pub fn emit(root: &Path) {
    let watched = sources(root);
    for w in &watched {
        println!("cargo::rerun-if-changed={}", root.join(w).display());
    }
    let commit = git(root, &["rev-parse", "HEAD"]).map(|hash| {
        for name in ["HEAD", "index", "packed-refs"] {
            if let Some(p) = git(root, &["rev-parse", "--git-path", name]) {
                println!("cargo::rerun-if-changed={}", root.join(p).display());
            }
        }
        if let Some(branch) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
            if let Some(p) = git(root, &["rev-parse", "--git-path", &branch]) {
                println!("cargo::rerun-if-changed={}", root.join(p).display());
            }
        }
        let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
        args.extend(watched.iter().map(String::as_str));
        match git(root, &args) {
            Some(changes) if changes.is_empty() => hash,
            _ => format!("{hash}+dirty"),
        }
    });
    println!(
        "cargo::rustc-env={COMMIT_ENV}={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
