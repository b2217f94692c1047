//! The `.smi` model file written by `smi fit` and read by `smi predict` / `smi inspect`.
//!
//! # Format (version 1)
//!
//! ```text
//! <header: one line of UTF-8 JSON> '\n' <payload: rows × cols little-endian f64, row-major>
//! ```
//!
//! The header is a single JSON object on the first line (so `head -n 1 model.smi` shows it):
//!
//! | key | meaning |
//! |---|---|
//! | `magic` | always `"smi-model"` |
//! | `format_version` | `1`; a reader refuses any other version |
//! | `smi_version` | version of the program that wrote the file |
//! | `task` | `"regression"` or `"classification"` |
//! | `method` | `smi`, `svgd`, `asvgd`, `ovi`, `map` or `nuts` |
//! | `architecture` | `sizes` (input, hidden…, output widths), `activation` (`Relu`/`Tanh`), `noise` (regression: `{"GammaPrecision":{"shape":1,"rate":0.1}}` or `{"Fixed":σ}`, in standardised target units), `prior_scale` |
//! | `target`, `features` | the CSV column names used for fitting, in the order of the network's inputs |
//! | `x_scaler` | `mean`, `std` per feature: the network sees (x − mean) / std (training statistics, ddof 0, 1 for a constant column) |
//! | `y_scaler` | regression: `mean`, `std` of the training targets, y = mean + std·y_model; `null` when targets were not scaled |
//! | `classes` | classification: class names; class k of the network is `classes[k]` |
//! | `settings` | how it was fitted: learning rate (and the grid scores under `--lr auto`), step budget, particles, ELBO draws, batch size, early stopping, seed, validation fraction, NUTS settings, `temperature` (T of the tempered likelihood; absent in older files, which used T = 1), `lr_schedule` (`constant` or `cosine`; absent in older files: constant) |
//! | `training` | rows used, validation rows, steps run, seconds, early stopped, last loss |
//! | `validation` | metrics on the validation split (`nll`; `rmse`, `coverage` of the central `interval`; or `accuracy`), or `null` |
//! | `payload` | `kind` (`"particles"`: the m × p particle matrix of the fitted guide, `guide` says which — Normal: p = 2d, `[loc \| ρ]` with σ = softplus(ρ); Delta: p = d, θ; `"draws"`: NUTS draws, one θ per row), `rows`, `cols`, `dim` (d, the model dimension), `encoding` = `"f64-le"` |
//! | `checksum` | `"crc32:"` and 8 lower-case hex digits: the CRC-32 (IEEE) of the file as it would be without this member, i.e. of the header line with `,"checksum":"crc32:…"` removed, its newline and the payload. Always the header's last member. Files of smi 0.1.0 before it have none; they are still read, with a warning |
//!
//! θ is in the model's unconstrained space: the network weights layer by layer (weights then
//! biases), then u = log precision for a regression model with a learned noise.
//!
//! The payload is exactly `rows · cols · 8` bytes after the newline; a shorter file is reported
//! as truncated, a longer one as corrupt.
//!
//! # Reading
//!
//! Nothing in a file is trusted: the checksum is verified, then the whole header is checked
//! against the architecture ([`Header::validate`]: every length — features and `x_scaler` vs
//! the input width, `y_scaler`, `classes` vs the output width, the payload's rows, columns
//! and d vs the network and guide — and every value a prediction uses) before anything is
//! used, and every payload value must be finite. Writing refuses a header or payload with a
//! non-finite number (JSON would turn it into `null`, and the file could never be read).

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use smi::GuideSettings;
use smi::{Matrix, Method, Mixture, Posterior};
use smi_models::Noise;

use super::csv_input::show;

mod header;
mod validate;

use header::MAX_HEADER;
pub use header::{
    Architecture, Header, Metrics, NutsDiagnostics, Payload, PayloadKind, Scaler, Settings, Task,
    Training, FORMAT_VERSION, MAGIC,
};

pub use validate::network_dim;
use validate::{first_non_finite, parse_checksum};

/// A model: header and payload.
#[derive(Clone, Debug)]
pub struct ModelFile {
    /// The header.
    pub header: Header,
    /// The payload matrix (`payload.rows × payload.cols`).
    pub payload: Matrix,
}

impl ModelFile {
    /// A model file for `fitted` (the payload fields of `header` are filled in here).
    pub fn new(mut header: Header, fitted: &Posterior, dim: usize) -> Self {
        let (kind, guide, m) = match fitted {
            Posterior::Mixture(p) => (
                PayloadKind::Particles,
                Some(p.guide()),
                p.particles().clone(),
            ),
            Posterior::Draws(d) => (PayloadKind::Draws, None, d.clone()),
        };
        header.payload = Payload {
            kind,
            guide,
            rows: m.rows(),
            cols: m.cols(),
            dim,
            encoding: "f64-le".to_string(),
        };
        ModelFile { header, payload: m }
    }

    /// The fitted approximation the payload holds.
    pub fn fitted(&self) -> Result<Posterior> {
        let p = &self.header.payload;
        match (p.kind, p.guide) {
            (PayloadKind::Particles, Some(guide)) => Ok(Posterior::Mixture(
                Mixture::new(guide, self.payload.clone(), p.dim)
                    .map_err(|e| anyhow!("corrupt model file: {e}"))?,
            )),
            (PayloadKind::Draws, _) => Ok(Posterior::Draws(self.payload.clone())),
            (PayloadKind::Particles, None) => {
                bail!("corrupt model header: particles without a guide")
            }
        }
    }

    /// Checks what saving needs without encoding the payload: finite header numbers and
    /// parameters, a consistent header, a payload of the header's shape, a header that reads
    /// back as written.
    ///
    /// # Errors
    /// The first of these that fails, saying what.
    pub fn check(&self) -> Result<()> {
        self.check_values()?;
        self.header_json().map(|_| ())
    }

    /// [`ModelFile::check`] but the header's round trip through JSON.
    fn check_values(&self) -> Result<()> {
        if let Some(field) = self.header.non_finite_field() {
            bail!(
                "cannot save the model: {field} holds a value that is not a finite number (a \
                 model file holds only finite numbers)"
            );
        }
        if let Some((r, c, v)) = first_non_finite(&self.payload) {
            bail!(
                "cannot save the model: the fitted parameters are not finite (row {}, column {} \
                 is {v}): the fit diverged; refit with a smaller --lr",
                r + 1,
                c + 1
            );
        }
        self.header
            .validate()
            .context("cannot save the model: the header is inconsistent")?;
        let p = &self.header.payload;
        if (p.rows, p.cols) != (self.payload.rows(), self.payload.cols()) {
            bail!(
                "cannot save the model: the header says {} × {} but the payload is {} × {}",
                p.rows,
                p.cols,
                self.payload.rows(),
                self.payload.cols()
            );
        }
        Ok(())
    }

    /// The header without its checksum as JSON, checked to read back as it was.
    fn header_json(&self) -> Result<Vec<u8>> {
        let mut header = self.header.clone();
        header.checksum = None;
        let json = serde_json::to_vec(&header).context("cannot encode the header")?;
        let back: Option<Header> = serde_json::from_slice(&json).ok();
        if back.as_ref() != Some(&header) {
            bail!(
                "cannot save the model: the header does not read back as it was written (a \
                 value JSON cannot hold?)"
            );
        }
        Ok(json)
    }

    /// Serialises to bytes, with the checksum.
    ///
    /// # Errors
    /// A non-finite number in the header or the payload (the fit diverged, or a value JSON
    /// cannot hold), a header inconsistent with the payload.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.check_values()?;
        let json = self.header_json()?;
        let mut body = Vec::with_capacity(self.payload.as_slice().len() * 8);
        for v in self.payload.as_slice() {
            body.extend_from_slice(&v.to_le_bytes());
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&json);
        crc.update(b"\n");
        crc.update(&body);
        let member = format!(",\"checksum\":\"crc32:{:08x}\"}}", crc.finalize());
        // `json` is an object: drop its closing brace, append the member (which closes it).
        let mut out = Vec::with_capacity(json.len() + member.len() + 1 + body.len());
        out.extend_from_slice(&json[..json.len() - 1]);
        out.extend_from_slice(member.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Parses bytes; `source` names them in errors. Verifies the checksum (when the file has
    /// one), validates the header ([`Header::validate`]), the payload's size and that every
    /// payload value is finite.
    pub fn from_bytes(bytes: &[u8], source: &str) -> Result<Self> {
        let not_model = |why: &str| anyhow!("{source} is not an smi model file ({why})");
        let nl = bytes
            .iter()
            .take(MAX_HEADER)
            .position(|&b| b == b'\n')
            .ok_or_else(|| {
                if bytes.is_empty() {
                    not_model("the file is empty")
                } else if bytes.starts_with(b"{\"magic\":\"smi-model\"") {
                    anyhow!("{source} is truncated: the model header ends before its newline")
                } else {
                    not_model("no header line")
                }
            })?;
        let (line, body) = (&bytes[..nl], &bytes[nl + 1..]);
        let v: Value = serde_json::from_slice(line)
            .map_err(|e| not_model(&format!("the header is not valid JSON: {e}")))?;
        if v.get("magic").and_then(Value::as_str) != Some(MAGIC) {
            return Err(not_model("the header has no \"magic\": \"smi-model\""));
        }
        match v.get("format_version").and_then(Value::as_u64) {
            Some(FORMAT_VERSION) => {}
            Some(other) => bail!(
                "{source} is a model file of format version {other}; this smi ({}) reads \
                 version {FORMAT_VERSION} only (refit the model with this version)",
                crate::VERSION
            ),
            None => return Err(not_model("the header has no format_version")),
        }
        // The payload size the header claims, for telling a truncated file from a damaged one.
        let claimed = || -> Option<u128> {
            let p = v.get("payload")?;
            let rows = p.get("rows")?.as_u64()? as u128;
            let cols = p.get("cols")?.as_u64()? as u128;
            rows.checked_mul(cols)?.checked_mul(8)
        };
        if let Some(c) = v.get("checksum") {
            let text = c.as_str().unwrap_or_default();
            let stored = parse_checksum(text).ok_or_else(|| {
                anyhow!(
                    "{source}: corrupt model header: the checksum {} is not \"crc32:\" and 8 \
                     hex digits",
                    show(&c.to_string())
                )
            })?;
            let suffix = format!(",\"checksum\":\"{text}\"}}");
            if !line.ends_with(suffix.as_bytes()) {
                bail!(
                    "{source}: corrupt model header: the checksum is not the header's last \
                     member, where smi writes it"
                );
            }
            let mut crc = crc32fast::Hasher::new();
            crc.update(&line[..line.len() - suffix.len()]);
            crc.update(b"}\n");
            crc.update(body);
            let computed = crc.finalize();
            if computed != stored {
                if let Some(want) = claimed().filter(|&w| (body.len() as u128) < w) {
                    bail!(
                        "{source} is truncated: the payload should have {want} bytes but only \
                         {} are present",
                        body.len()
                    );
                }
                bail!(
                    "{source} is corrupt: its checksum does not match its contents (stored \
                     crc32 {stored:08x}, computed {computed:08x}); the file was changed or \
                     damaged after smi wrote it"
                );
            }
        }
        let header: Header = serde_json::from_value(v)
            .map_err(|e| anyhow!("{source}: corrupt model header: {e}"))?;
        header
            .validate()
            .map_err(|e| anyhow!("{source}: inconsistent model header: {e}"))?;
        let p = &header.payload;
        // `validate` checked that this does not overflow.
        let expected = p.rows.saturating_mul(p.cols).saturating_mul(8);
        if body.len() < expected {
            bail!(
                "{source} is truncated: the payload should have {expected} bytes ({} × {} f64 \
                 values) but only {} are present",
                p.rows,
                p.cols,
                body.len()
            );
        }
        if body.len() > expected {
            bail!(
                "{source} is corrupt: {} bytes follow the {expected}-byte payload",
                body.len() - expected
            );
        }
        let values: Vec<f64> = body
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        let payload = Matrix::from_vec(p.rows, p.cols, values)
            .map_err(|e| anyhow!("{source}: corrupt payload: {e}"))?;
        if let Some((r, c, x)) = first_non_finite(&payload) {
            bail!(
                "{source} is corrupt: payload value at row {}, column {} is {x} (smi writes \
                 only finite numbers)",
                r + 1,
                c + 1
            );
        }
        Ok(ModelFile { header, payload })
    }

    /// Writes to `path` through a temporary file beside it, synced and renamed into place
    /// ([`crate::files::write_atomic_synced`]: the temporary name is unique to the
    /// process and the call, so saves to one path never share it; the last rename wins).
    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        crate::files::write_atomic_synced(path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Reads `path` ([`ModelFile::from_bytes`]); warns on stderr when the file has no
    /// checksum (written before checksums), since damage to it cannot be detected.
    pub fn load(path: &Path) -> Result<Self> {
        let len = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let limit = super::limits::machine_memory();
        if len > limit {
            bail!(
                "{} is not an smi model file that fits in memory ({} bytes, more than this \
                 machine's {})",
                path.display(),
                len,
                super::limits::human(limit as u128)
            );
        }
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let m = Self::from_bytes(&bytes, &path.display().to_string())?;
        if m.header.checksum.is_none() {
            eprintln!(
                "warning: {} has no checksum (written by an older smi), so damage to it cannot \
                 be detected; refit the model to get a checked file",
                path.display()
            );
        }
        Ok(m)
    }
}

/// `Some(v)` for a finite `v`.
pub fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
pub(crate) mod tests;
