//! `smi data`: list the data sets the experiments read (source, SHA-256, whether present), fetch
//! them over HTTP(S) with checksum verification, verify local copies.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Subcommand;
use smi_data::{DataSet, FileStatus};

/// `smi data [list|fetch|verify]`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Where the data are looked for (first match): --data-dir, $SMI_DATA_DIR, the per-user folder \
($XDG_DATA_HOME/smi or ~/.local/share/smi) if it exists, the repository's sibling shared/data. \
`fetch` writes to --data-dir, else $SMI_DATA_DIR, else the per-user folder.\n\
The wave data of `reproduce wave` and `reproduce toy` are generated: nothing to fetch.")]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Subcommand, Debug)]
enum Action {
    /// List every data set (the default): files, whether present, where it comes from.
    List {
        /// Every file's SHA-256 and source URL, `sha256sum` style (`<sha256>  <path>  <url>`).
        #[arg(long)]
        files: bool,
        /// The data folder to report on.
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Download data sets, checking every file's SHA-256.
    ///
    /// Files are written atomically (a failed or corrupt download leaves nothing behind); files
    /// already present with the right checksum are not downloaded again.
    Fetch {
        /// A data set (`smi data list`), `uci` for the nine UCI sets, or `all`.
        #[arg(required = true)]
        names: Vec<String>,
        /// Where to write (default: $SMI_DATA_DIR, else the per-user folder).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Fetch `<MIRROR>/<path>` (a copy of a data folder served over HTTP) instead of the
        /// sources.
        #[arg(long)]
        mirror: Option<String>,
        /// A checksum list of one's own (`sha256sum` format, paths relative to the data folder)
        /// instead of the catalog; NAME then selects the files under `NAME/`. Needs --mirror.
        #[arg(long, requires = "mirror")]
        manifest: Option<PathBuf>,
        /// Download again even files already present with the right checksum.
        #[arg(long)]
        force: bool,
        /// Give up on a file after this many seconds (1 to 604800, a week).
        #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT))]
        timeout: u64,
    },
    /// Check the SHA-256 of every file of the named data sets (default: all) in the data folder.
    Verify {
        /// Data sets to check (default: every set).
        names: Vec<String>,
        /// The data folder to check.
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

/// The longest `--timeout` (a week): longer ones would overflow the clock's deadline.
const MAX_TIMEOUT: u64 = 7 * 24 * 3600;

/// Runs `smi data`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    match &args.action {
        None => list(false, None),
        Some(Action::List { files, data_dir }) => list(*files, data_dir.as_deref()),
        Some(Action::Fetch {
            names,
            data_dir,
            mirror,
            manifest,
            force,
            timeout,
        }) => {
            let sets = chosen_sets(names, mirror.as_deref(), manifest.as_deref())?;
            let dir = fetch_dir(data_dir.as_deref())?;
            fetch(&sets, &dir, *force, Duration::from_secs(*timeout))
        }
        Some(Action::Verify { names, data_dir }) => {
            let all = smi_data::catalog()?;
            let sets = if names.is_empty() {
                all
            } else {
                select_all(&all, names)?
            };
            verify(&sets, &lookup_dir(data_dir.as_deref()))
        }
    }
}

/// The folder to read: `--data-dir`, else [`smi_data::default_data_dir`].
fn lookup_dir(data_dir: Option<&Path>) -> PathBuf {
    data_dir.map_or_else(smi_data::default_data_dir, Path::to_path_buf)
}

/// The folder to write: `--data-dir`, else `$SMI_DATA_DIR`, else the per-user folder.
fn fetch_dir(data_dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(d) = data_dir {
        return Ok(d.to_path_buf());
    }
    if let Some(v) = std::env::var_os(smi_data::DATA_DIR_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(v));
    }
    smi_data::user_data_dir()
        .context("no per-user data folder (neither XDG_DATA_HOME nor HOME is set): give --data-dir")
}

/// The union of the sets `names` stand for, each once, in catalog order of first mention.
fn select_all(all: &[DataSet], names: &[String]) -> anyhow::Result<Vec<DataSet>> {
    let mut out: Vec<DataSet> = Vec::new();
    for n in names {
        for s in smi_data::select(all, n)? {
            if !out.iter().any(|o| o.name == s.name) {
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// The sets to fetch: from the catalog (sources or `mirror`), or from a checksum list.
fn chosen_sets(
    names: &[String],
    mirror: Option<&str>,
    manifest: Option<&Path>,
) -> anyhow::Result<Vec<DataSet>> {
    if let (Some(m), Some(mirror)) = (manifest, mirror) {
        let text = std::fs::read_to_string(m)
            .with_context(|| format!("cannot read the checksum list {}", m.display()))?;
        return names
            .iter()
            .map(|n| smi_data::from_manifest(&text, n, mirror).map_err(Into::into))
            .collect();
    }
    let sets = select_all(&smi_data::catalog()?, names)?;
    Ok(match mirror {
        Some(m) => sets.into_iter().map(|s| s.with_mirror(m)).collect(),
        None => sets,
    })
}

/// How many of `set`'s files are in `dir` (existence only).
fn present(set: &DataSet, dir: &Path) -> usize {
    set.files
        .iter()
        .filter(|f| dir.join(&f.path).is_file())
        .count()
}

fn list(files: bool, data_dir: Option<&Path>) -> anyhow::Result<()> {
    let sets = smi_data::catalog()?;
    if files {
        for f in sets.iter().flat_map(|s| &s.files) {
            let url = f.url.as_deref().unwrap_or("(no direct download)");
            println!("{}  {}  {url}", f.sha256, f.path);
        }
        return Ok(());
    }
    let dir = lookup_dir(data_dir);
    println!("data folder: {}", dir.display());
    println!(
        "{:<12} {:>5}  {:<9} {:<16} source",
        "name", "files", "here", "used by"
    );
    for s in &sets {
        let here = match present(s, &dir) {
            n if n == s.files.len() => "yes".to_string(),
            0 => "no".to_string(),
            n => format!("{n} of {}", s.files.len()),
        };
        let used = s.used_by.strip_prefix("reproduce ").unwrap_or("-");
        println!(
            "{:<12} {:>5}  {:<9} {:<16} {}",
            s.name,
            s.files.len(),
            here,
            used,
            s.source
        );
    }
    println!(
        "{:<12} {:>5}  {:<9} {:<16} generated in code (no files)",
        "wave", "-", "-", "wave, toy"
    );
    println!(
        "\nSHA-256 and URL of every file: `smi data list --files`. Fetch: `smi data fetch NAME` \
         (NAME: a set above, `uci`, or `all`); check copies: `smi data verify`."
    );
    Ok(())
}

fn fetch(sets: &[DataSet], dir: &Path, force: bool, timeout: Duration) -> anyhow::Result<()> {
    if let Some(s) = sets.iter().find(|s| !s.downloadable()) {
        bail!(
            "data set {} cannot be fetched from its source ({}); copy it from a data folder \
             that has it, or fetch it from such a copy with --mirror",
            s.name,
            s.source
        );
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .build()
        .into();
    let (mut fetched, mut kept, mut failed) = (0usize, 0usize, Vec::new());
    for f in sets.iter().flat_map(|s| &s.files) {
        if !force && smi_data::verify_file(dir, f)? == FileStatus::Ok {
            kept += 1;
            continue;
        }
        let url = f.url.as_deref().unwrap_or_default();
        let got = agent
            .get(url)
            .call()
            .map_err(anyhow::Error::from)
            .and_then(|mut resp| {
                let mut body = resp.body_mut().as_reader();
                Ok(smi_data::install_verified(&mut body, dir, f)?)
            });
        match got {
            Ok(n) => {
                fetched += 1;
                eprintln!("fetched {} ({n} bytes, SHA-256 ok)", f.path);
            }
            Err(e) => {
                eprintln!("error: {} from {url}: {e:#}", f.path);
                failed.push(f.path.clone());
            }
        }
    }
    eprintln!(
        "{fetched} files fetched, {kept} already present, {} failed, in {}",
        failed.len(),
        dir.display()
    );
    if !failed.is_empty() {
        bail!(
            "{} files could not be fetched: {}",
            failed.len(),
            failed.join(", ")
        );
    }
    if lookup_dir(None) != dir {
        eprintln!(
            "note: the experiments look elsewhere by default; pass --data-dir {} or set {}",
            dir.display(),
            smi_data::DATA_DIR_ENV
        );
    }
    Ok(())
}

fn verify(sets: &[DataSet], dir: &Path) -> anyhow::Result<()> {
    let (mut ok, mut missing, mut bad) = (0usize, 0usize, Vec::new());
    for f in sets.iter().flat_map(|s| &s.files) {
        match smi_data::verify_file(dir, f)? {
            FileStatus::Ok => ok += 1,
            FileStatus::Missing => missing += 1,
            FileStatus::Mismatch(found) => {
                eprintln!("MISMATCH {}: expected {}, got {found}", f.path, f.sha256);
                bad.push(f.path.clone());
            }
        }
    }
    println!(
        "{ok} files ok, {missing} missing, {} with another checksum, in {}",
        bad.len(),
        dir.display()
    );
    if !bad.is_empty() || missing > 0 {
        bail!(
            "{} of {} files are missing or differ (fetch them with `smi data fetch`)",
            missing + bad.len(),
            ok + missing + bad.len()
        );
    }
    Ok(())
}
