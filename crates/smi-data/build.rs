//! Finds the data folder for the tests that need real data (UCI, MNIST) and tells the compiler
//! whether it holds them. Shared by `smi-data`, `smi-experiments` and `smi-cli`
//! (`build = "../smi-data/build.rs"` in their manifests), and `smi-examples`.
//!
//! For `smi-experiments` it also sets `SMI_GIT_COMMIT`, the commit its records name
//! (`build/commit.rs`). It sets, for every target of the package being built:
//! * `SMI_TEST_DATA_DIR` (read with `env!`): `$SMI_TEST_DATA_DIR` if set, else the repository's
//!   sibling `shared/data` if it exists (CI's copy), else the per-user folder `smi data fetch`
//!   fills. Not `$SMI_DATA_DIR`: a variable users set for runs must not rebuild the crates
//!   whenever it changes;
//! * the cfg `smi_no_uci_data` when a UCI `data.txt` is missing there, `smi_no_mnist_data` when an
//!   MNIST file is, `smi_no_posteriordb_data` when a posteriordb file is: tests carry `#[cfg_attr(smi_no_uci_data, ignore = "…")]` and are listed as
//!   ignored, with the reason, instead of passing without testing anything.
//!
//! With `SMI_REQUIRE_DATA=1` (CI) missing data fail the build instead. Presence is checked when
//! the package is built: after fetching data into a new place, set `SMI_TEST_DATA_DIR` (a change
//! of it reruns this script) or `touch crates/smi-data/build.rs`.

// The commit the binary is built from (set for `smi-experiments`, whose records carry it).
mod commit {
    include!("build/commit.rs");
}

// The library's own lookup rules; the build script uses only some of them.
#[allow(dead_code)]
mod locate {
    include!("src/locate.rs");
}

use std::path::Path;

use locate::{repo_data_dir, user_data_dir};

/// The variable that overrides where the tests look for data.
const TEST_DIR_ENV: &str = "SMI_TEST_DATA_DIR";

/// The UCI folders (as `UciDataset::folder` names them) whose `data.txt` the tests read.
const UCI: [&str; 9] = [
    "bostonHousing",
    "concrete",
    "energy",
    "kin8nm",
    "naval-propulsion-plant",
    "power-plant",
    "protein-tertiary-structure",
    "wine-quality-red",
    "yacht",
];

/// The MNIST files (as `smi_data::MNIST_FILES` names them).
const MNIST: [&str; 4] = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
];

/// The posteriordb posteriors (folder names) the examples' tests read.
const POSTERIORDB: [&str; 4] = [
    "eight_schools-eight_schools_noncentered",
    "kidiq-kidscore_momiq",
    "sblrc-blr",
    "arK-arK",
];

/// The workspace folder: the nearest ancestor of the package being built that holds this
/// script (`crates/smi-data/build.rs`).
fn workspace_root() -> std::path::PathBuf {
    let manifest =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    manifest
        .ancestors()
        .find(|a| a.join("crates/smi-data/build.rs").is_file())
        .map_or(manifest.clone(), Path::to_path_buf)
}

fn main() {
    let root = workspace_root();
    let here = root.join("crates/smi-data");
    if std::env::var("CARGO_PKG_NAME").as_deref() == Ok("smi-experiments") {
        commit::emit(&root);
    }
    for f in ["build.rs", "build/commit.rs", "src/locate.rs"] {
        println!("cargo::rerun-if-changed={}", here.join(f).display());
    }
    for v in [
        TEST_DIR_ENV,
        "XDG_DATA_HOME",
        "HOME",
        "LOCALAPPDATA",
        "SMI_REQUIRE_DATA",
    ] {
        println!("cargo::rerun-if-env-changed={v}");
    }
    println!(
        "cargo::rustc-check-cfg=cfg(smi_no_uci_data, smi_no_mnist_data, smi_no_posteriordb_data)"
    );

    // `shared/data` beside the workspace (the package may be `crates/<name>` or `examples`).
    let repo = root
        .parent()
        .map_or_else(repo_data_dir, |p| p.join("shared").join("data"));
    let dir = match std::env::var_os(TEST_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(v) => std::path::PathBuf::from(v),
        None if repo.is_dir() => repo,
        None => user_data_dir().filter(|u| u.is_dir()).unwrap_or(repo),
    };
    println!("cargo::rustc-env={TEST_DIR_ENV}={}", dir.display());
    let require = std::env::var_os("SMI_REQUIRE_DATA").is_some_and(|v| !v.is_empty() && v != "0");
    let sets = [
        ("uci", UCI.map(|d| format!("uci/{d}/data.txt")).to_vec()),
        ("mnist", MNIST.map(|f| format!("mnist/{f}")).to_vec()),
        (
            "posteriordb",
            POSTERIORDB
                .iter()
                .flat_map(|p| {
                    ["data.json", "reference_draws.json", "info.json"]
                        .map(|f| format!("posteriordb/{p}/{f}"))
                })
                .collect(),
        ),
    ];
    for (set, files) in sets {
        let paths: Vec<_> = files.iter().map(|f| dir.join(f)).collect();
        match paths.iter().find(|p| !p.is_file()) {
            None => {
                // Present: rebuild should they disappear.
                for p in &paths {
                    println!("cargo::rerun-if-changed={}", p.display());
                }
            }
            Some(missing) if require => {
                eprintln!(
                    "SMI_REQUIRE_DATA is set but {} is missing (fetch with `smi data fetch {set}`)",
                    missing.display()
                );
                std::process::exit(1);
            }
            Some(missing) => {
                println!("cargo::rustc-cfg=smi_no_{set}_data");
                println!(
                    "cargo::warning=tests that need the {set} data are ignored: {} is missing",
                    missing.display()
                );
            }
        }
    }
}
