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
//! | `settings` | how it was fitted: learning rate (and the grid scores under `--lr auto`), step budget, particles, ELBO draws, batch size, early stopping, seed, validation fraction, NUTS settings |
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

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use smi::GuideSettings;
use smi::{Matrix, Method, Mixture, Posterior};
use smi_models::{Activation, Noise};

use super::csv_input::show;

/// The `magic` value of every model file.
pub const MAGIC: &str = "smi-model";
/// The format version this program writes and reads.
pub const FORMAT_VERSION: u64 = 1;
/// The longest header accepted (a guard against reading a huge non-model file as a header).
const MAX_HEADER: usize = 64 << 20;

/// Regression or classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Gaussian likelihood on a numeric target.
    Regression,
    /// Categorical likelihood over the target's classes.
    Classification,
}

impl Task {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Task::Regression => "regression",
            Task::Classification => "classification",
        }
    }
}

/// The network and likelihood.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    /// Layer widths: inputs, hidden layers…, outputs (1 for regression, C for classification).
    pub sizes: Vec<usize>,
    /// Hidden-layer nonlinearity.
    pub activation: Activation,
    /// Observation noise (regression only).
    pub noise: Option<Noise>,
    /// Standard deviation of the N(0, s²) weight prior.
    pub prior_scale: f64,
}

/// An affine standardisation: z = (v − mean) / std per column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scaler {
    /// Training means.
    pub mean: Vec<f64>,
    /// Training standard deviations (ddof 0; 1 for a constant column).
    pub std: Vec<f64>,
}

/// How the model was fitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Adam's learning rate (`None` for NUTS).
    pub lr: Option<f64>,
    /// `"fixed"` or `"auto"` (grid search on the validation split).
    pub lr_mode: String,
    /// Under `--lr auto`: (learning rate, validation score) of each grid point; a diverged run
    /// has score `null`.
    pub lr_grid: Vec<(f64, Option<f64>)>,
    /// Step budget.
    pub max_steps: u64,
    /// Particles m (SMI/SVGD/ASVGD).
    pub particles: usize,
    /// ELBO draws S per particle (SMI).
    pub elbo_draws: usize,
    /// Mini-batch rows (`None`: full data).
    pub batch_size: Option<usize>,
    /// Early stopping on the force norm (Stein methods).
    pub early_stopping: bool,
    /// Uniform(−r, r) initialisation radius.
    pub init_radius: f64,
    /// The seed of the fit (prediction draws derive theirs from it).
    pub seed: u64,
    /// Fraction of rows held out for validation (`None`: none).
    pub validation: Option<f64>,
    /// NUTS warm-up iterations and draws.
    pub nuts_warmup: usize,
    /// NUTS draws kept.
    pub nuts_draws: usize,
}

/// What the fit did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Training {
    /// Rows the model was fitted on.
    pub rows: usize,
    /// Rows held out for validation.
    pub validation_rows: usize,
    /// Steps run (NUTS: warm-up + draws).
    pub steps: u64,
    /// Training seconds.
    pub seconds: f64,
    /// Whether early stopping ended the run.
    pub early_stopped: bool,
    /// The loss of the last step.
    pub final_loss: Option<f64>,
}

/// Validation metrics (`None` for a metric that does not apply or was not finite).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Mean negative log predictive density (regression: mixture NLL in target units;
    /// classification: −mean log of the draw-averaged probability of the true class).
    pub nll: Option<f64>,
    /// Regression: RMSE of the predictive mean.
    pub rmse: Option<f64>,
    /// Classification: accuracy of the most probable class.
    pub accuracy: Option<f64>,
    /// Regression: fraction of targets inside the central predictive interval of mass
    /// `interval`.
    pub coverage: Option<f64>,
    /// The mass of that interval.
    pub interval: Option<f64>,
}

/// Which matrix the payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadKind {
    /// The fitted guide's particles.
    Particles,
    /// NUTS draws.
    Draws,
}

/// Shape of the payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    /// Particles or draws.
    pub kind: PayloadKind,
    /// The guide of the particles (`None` for draws).
    pub guide: Option<GuideSettings>,
    /// Number of rows (particles or draws).
    pub rows: usize,
    /// Values per row.
    pub cols: usize,
    /// d, the model dimension.
    pub dim: usize,
    /// Always `"f64-le"`.
    pub encoding: String,
}

/// The JSON header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`MAGIC`].
    pub magic: String,
    /// Always [`FORMAT_VERSION`] when written by this program.
    pub format_version: u64,
    /// The writing program's version.
    pub smi_version: String,
    /// Regression or classification.
    pub task: Task,
    /// The inference method's name.
    pub method: String,
    /// Network and likelihood.
    pub architecture: Architecture,
    /// Target column name.
    pub target: String,
    /// Feature column names, in input order.
    pub features: Vec<String>,
    /// Input standardisation.
    pub x_scaler: Scaler,
    /// Target standardisation (regression).
    pub y_scaler: Option<Scaler>,
    /// Class names (classification).
    pub classes: Option<Vec<String>>,
    /// How it was fitted.
    pub settings: Settings,
    /// What the fit did.
    pub training: Training,
    /// Validation metrics.
    pub validation: Option<Metrics>,
    /// Payload shape.
    pub payload: Payload,
    /// `"crc32:xxxxxxxx"` of the file without this member (see the module docs); `None` in
    /// files written before checksums, and while a header is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

/// d of a network with layer widths `sizes` (Σ (sizes[l] + 1)·sizes[l+1]), `None` when it
/// overflows.
pub fn network_dim(sizes: &[usize]) -> Option<usize> {
    sizes.windows(2).try_fold(0usize, |d, w| {
        w[0].checked_add(1)?.checked_mul(w[1])?.checked_add(d)
    })
}

/// Whether every value is finite.
fn all_finite(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// `name` when it repeats an earlier entry of `names`.
fn first_duplicate(names: &[String]) -> Option<&String> {
    let mut seen = std::collections::BTreeSet::new();
    names.iter().find(|n| !seen.insert(n.as_str()))
}

/// A list of widths for a message, cut after 10 entries.
fn show_sizes(sizes: &[usize]) -> String {
    let mut s: Vec<String> = sizes.iter().take(10).map(usize::to_string).collect();
    if sizes.len() > 10 {
        s.push(format!("… ({} more)", sizes.len() - 10));
    }
    format!("[{}]", s.join(", "))
}

/// A scaler of `width` columns (`what`, e.g. "inputs") with finite means and finite positive
/// stds.
fn check_scaler(name: &str, s: &Scaler, width: usize, what: &str) -> Result<()> {
    if s.mean.len() != width || s.std.len() != width {
        bail!(
            "{name} has {} means and {} stds, but the model has {width} {what}",
            s.mean.len(),
            s.std.len()
        );
    }
    if !all_finite(&s.mean) {
        bail!("{name}.mean holds a value that is not a finite number");
    }
    if s.std.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        bail!("{name}.std holds a value that is not a positive finite number");
    }
    Ok(())
}

impl Header {
    /// d, the model dimension of the architecture: the network's weights and biases, plus the
    /// log precision of a regression model with a learned noise.
    ///
    /// # Errors
    /// Sizes whose parameter count overflows.
    pub fn model_dim(&self) -> Result<usize> {
        let a = &self.architecture;
        let learned =
            self.task == Task::Regression && matches!(a.noise, Some(Noise::GammaPrecision { .. }));
        network_dim(&a.sizes)
            .and_then(|d| d.checked_add(usize::from(learned)))
            .ok_or_else(|| {
                anyhow!(
                    "architecture.sizes {}: the parameter count overflows",
                    show_sizes(&a.sizes)
                )
            })
    }

    /// Checks the whole header against its architecture before anything is used: the network,
    /// the task's parts (noise and `y_scaler` for regression, `classes` for classification),
    /// every length (features, `x_scaler`, `y_scaler`, classes, payload rows/cols/d vs the
    /// network and guide) and every value a prediction uses (finite scalers with positive
    /// stds, a positive prior scale and noise).
    ///
    /// # Errors
    /// The first inconsistency, as a sentence naming the header fields.
    pub fn validate(&self) -> Result<()> {
        let a = &self.architecture;
        let sizes = &a.sizes;
        if sizes.len() < 2 || sizes.contains(&0) {
            bail!(
                "architecture.sizes {} must hold an input width, the hidden widths and an \
                 output width, none zero",
                show_sizes(sizes)
            );
        }
        let (inputs, outputs) = (sizes[0], sizes[sizes.len() - 1]);
        let d = self.model_dim()?;
        if self.features.len() != inputs {
            bail!(
                "{} feature names for a network with {inputs} inputs (architecture.sizes {})",
                self.features.len(),
                show_sizes(sizes)
            );
        }
        if let Some(f) = first_duplicate(&self.features) {
            bail!("the feature {} is listed twice", show(f));
        }
        check_scaler("x_scaler", &self.x_scaler, inputs, "inputs")?;
        if !(a.prior_scale.is_finite() && a.prior_scale > 0.0) {
            bail!(
                "architecture.prior_scale {} is not a positive number",
                a.prior_scale
            );
        }
        match self.task {
            Task::Regression => {
                if outputs != 1 {
                    bail!(
                        "a regression network has one output, but architecture.sizes {} ends \
                         in {outputs}",
                        show_sizes(sizes)
                    );
                }
                let ok = |v: f64| v.is_finite() && v > 0.0;
                match a.noise {
                    None => bail!("a regression model without a noise model (architecture.noise)"),
                    Some(Noise::Fixed(s)) if !ok(s) => {
                        bail!("architecture.noise: the noise scale {s} is not a positive number")
                    }
                    Some(Noise::GammaPrecision { shape, rate }) if !ok(shape) || !ok(rate) => {
                        bail!(
                            "architecture.noise: the Gamma prior (shape {shape}, rate {rate}) \
                             needs positive numbers"
                        )
                    }
                    Some(_) => {}
                }
                if let Some(y) = &self.y_scaler {
                    check_scaler("y_scaler", y, 1, "target")?;
                }
                if self.classes.is_some() {
                    bail!("a regression model with class names (classes)");
                }
            }
            Task::Classification => {
                let Some(classes) = &self.classes else {
                    bail!("a classifier without class names (classes)");
                };
                if classes.len() != outputs {
                    bail!(
                        "{} class names (classes) for a network with {outputs} outputs \
                         (architecture.sizes {})",
                        classes.len(),
                        show_sizes(sizes)
                    );
                }
                if classes.len() < 2 {
                    bail!("a classifier needs at least two classes");
                }
                if let Some(c) = first_duplicate(classes) {
                    bail!("the class {} is listed twice", show(c));
                }
                if a.noise.is_some() {
                    bail!("a classifier with a noise model (architecture.noise)");
                }
                if self.y_scaler.is_some() {
                    bail!("a classifier with a target scaler (y_scaler)");
                }
            }
        }
        let method: Method = self.method.parse().map_err(|_| {
            anyhow!(
                "unknown method {} (expected one of smi, svgd, asvgd, ovi, map, nuts)",
                show(&self.method)
            )
        })?;
        let p = &self.payload;
        if p.encoding != "f64-le" {
            bail!("unknown payload encoding {}", show(&p.encoding));
        }
        if p.dim != d {
            bail!(
                "payload.dim is {} but the network (architecture.sizes {}) has d = {d} \
                 parameters",
                p.dim,
                show_sizes(sizes)
            );
        }
        let cols = match (p.kind, p.guide) {
            (PayloadKind::Particles, Some(GuideSettings::Normal { .. })) => d.checked_mul(2),
            (PayloadKind::Particles, Some(GuideSettings::Delta)) => Some(d),
            (PayloadKind::Particles, None) => bail!("particles without a guide (payload.guide)"),
            (PayloadKind::Draws, None) => Some(d),
            (PayloadKind::Draws, Some(_)) => bail!("NUTS draws with a guide (payload.guide)"),
        };
        if cols != Some(p.cols) {
            bail!(
                "the payload has {} values per row, but {} of a network with d = {d} have {}",
                p.cols,
                match p.guide {
                    Some(GuideSettings::Normal { .. }) => "Normal particles (2d)",
                    Some(GuideSettings::Delta) => "point-mass particles (d)",
                    None => "NUTS draws (d)",
                },
                cols.map_or_else(|| "more than can be counted".into(), |c| c.to_string())
            );
        }
        if (method == Method::Nuts) != (p.kind == PayloadKind::Draws) {
            bail!(
                "method {} with a payload of {}",
                method.name(),
                match p.kind {
                    PayloadKind::Draws => "NUTS draws",
                    PayloadKind::Particles => "particles",
                }
            );
        }
        if p.rows == 0 {
            bail!("the payload has no rows");
        }
        if p.rows
            .checked_mul(p.cols)
            .and_then(|n| n.checked_mul(8))
            .is_none()
        {
            bail!(
                "the payload size ({} × {} values) overflows",
                p.rows,
                p.cols
            );
        }
        Ok(())
    }

    /// The first header field holding a non-finite number (JSON cannot hold one: it would be
    /// written as `null` and the file could not be read back).
    pub fn non_finite_field(&self) -> Option<&'static str> {
        let opt = |v: Option<f64>| v.is_some_and(|x| !x.is_finite());
        let a = &self.architecture;
        let s = &self.settings;
        let t = &self.training;
        let noise_bad = match a.noise {
            Some(Noise::Fixed(v)) => !v.is_finite(),
            Some(Noise::GammaPrecision { shape, rate }) => !(shape.is_finite() && rate.is_finite()),
            None => false,
        };
        let checks: [(&'static str, bool); 14] = [
            ("x_scaler.mean", !all_finite(&self.x_scaler.mean)),
            ("x_scaler.std", !all_finite(&self.x_scaler.std)),
            (
                "y_scaler.mean",
                self.y_scaler.as_ref().is_some_and(|y| !all_finite(&y.mean)),
            ),
            (
                "y_scaler.std",
                self.y_scaler.as_ref().is_some_and(|y| !all_finite(&y.std)),
            ),
            ("architecture.prior_scale", !a.prior_scale.is_finite()),
            ("architecture.noise", noise_bad),
            ("settings.lr", opt(s.lr)),
            (
                "settings.lr_grid",
                s.lr_grid.iter().any(|(lr, v)| !lr.is_finite() || opt(*v)),
            ),
            ("settings.init_radius", !s.init_radius.is_finite()),
            ("settings.validation", opt(s.validation)),
            ("training.seconds", !t.seconds.is_finite()),
            ("training.final_loss", opt(t.final_loss)),
            (
                "validation",
                self.validation.as_ref().is_some_and(|m| {
                    [m.nll, m.rmse, m.accuracy, m.coverage, m.interval]
                        .into_iter()
                        .any(opt)
                }),
            ),
            (
                "payload.guide",
                matches!(self.payload.guide, Some(GuideSettings::Normal { init_scale }) if !init_scale.is_finite()),
            ),
        ];
        checks.into_iter().find(|c| c.1).map(|c| c.0)
    }
}

/// The first non-finite value of `m`: (row, column, value).
fn first_non_finite(m: &Matrix) -> Option<(usize, usize, f64)> {
    let cols = m.cols().max(1);
    m.as_slice()
        .iter()
        .position(|v| !v.is_finite())
        .map(|i| (i / cols, i % cols, m.as_slice()[i]))
}

/// The stored checksum of a `"crc32:xxxxxxxx"` string.
fn parse_checksum(s: &str) -> Option<u32> {
    let hex = s.strip_prefix("crc32:")?;
    if hex.len() != 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

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

    /// Serialises to bytes, with the checksum.
    ///
    /// # Errors
    /// A non-finite number in the header or the payload (the fit diverged, or a value JSON
    /// cannot hold), a header inconsistent with the payload.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
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
                smi_experiments::records::VERSION
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

    /// Writes to `path` (through a temporary file renamed into place).
    pub fn save(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        let tmp = path.with_extension("smi.tmp");
        let mut f = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(&bytes)
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        drop(f);
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))?;
        Ok(())
    }

    /// Reads `path` ([`ModelFile::from_bytes`]); warns on stderr when the file has no
    /// checksum (written before checksums), since damage to it cannot be detected.
    pub fn load(path: &Path) -> Result<Self> {
        let len = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        let limit = super::limits::memory_limit();
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
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A small regression model: 1 → 2 → 1 ReLU, learned noise, two Normal particles (d = 8).
    pub(crate) fn sample() -> ModelFile {
        let header = Header {
            magic: MAGIC.into(),
            format_version: FORMAT_VERSION,
            smi_version: "t".into(),
            task: Task::Regression,
            method: "smi".into(),
            architecture: Architecture {
                sizes: vec![1, 2, 1],
                activation: Activation::Relu,
                noise: Some(Noise::uci()),
                prior_scale: 1.0,
            },
            target: "y".into(),
            features: vec!["x".into()],
            x_scaler: Scaler {
                mean: vec![0.5],
                std: vec![2.0],
            },
            y_scaler: None,
            classes: None,
            settings: Settings {
                lr: Some(1e-3),
                lr_mode: "fixed".into(),
                lr_grid: vec![],
                max_steps: 1,
                particles: 2,
                elbo_draws: 1,
                batch_size: None,
                early_stopping: true,
                init_radius: 0.1,
                seed: 0,
                validation: None,
                nuts_warmup: 0,
                nuts_draws: 0,
            },
            training: Training {
                rows: 1,
                validation_rows: 0,
                steps: 1,
                seconds: 0.0,
                early_stopped: false,
                final_loss: None,
            },
            validation: None,
            payload: Payload {
                kind: PayloadKind::Draws,
                guide: None,
                rows: 0,
                cols: 0,
                dim: 0,
                encoding: String::new(),
            },
            checksum: None,
        };
        // d = 1·2 + 2 + 2·1 + 1 + 1 (precision) = 8; Normal particles: 2 × 16.
        let post = Mixture::new(
            GuideSettings::normal(),
            Matrix::from_fn(2, 16, |i, j| (i * 16 + j) as f64 * 0.25 - 1.0),
            8,
        )
        .unwrap();
        ModelFile::new(header, &Posterior::Mixture(post), 8)
    }

    /// A small classifier: 2 → 3 → 3 tanh, classes a, b, c, two SVGD point masses (d = 21).
    pub(crate) fn classifier() -> ModelFile {
        let mut h = sample().header;
        h.task = Task::Classification;
        h.method = "svgd".into();
        h.architecture = Architecture {
            sizes: vec![2, 3, 3],
            activation: Activation::Tanh,
            noise: None,
            prior_scale: 1.0,
        };
        h.target = "label".into();
        h.features = vec!["u".into(), "v".into()];
        h.x_scaler = Scaler {
            mean: vec![0.0, 1.0],
            std: vec![1.0, 3.0],
        };
        h.classes = Some(vec!["a".into(), "b".into(), "c".into()]);
        let post = Mixture::new(
            GuideSettings::Delta,
            Matrix::from_fn(2, 21, |i, j| ((i * 21 + j) % 7) as f64 * 0.3 - 0.9),
            21,
        )
        .unwrap();
        ModelFile::new(h, &Posterior::Mixture(post), 21)
    }

    /// The header of `bytes` as JSON and the payload after it.
    pub(crate) fn split(bytes: &[u8]) -> (Value, Vec<u8>) {
        let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
        (
            serde_json::from_slice(&bytes[..nl]).unwrap(),
            bytes[nl + 1..].to_vec(),
        )
    }

    /// A file of header `v` and payload `body`, with a fresh checksum when `checksum` is set
    /// (as smi writes it), without one otherwise (as older versions wrote them).
    pub(crate) fn encode(v: &Value, body: &[u8], checksum: bool) -> Vec<u8> {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("checksum");
        }
        let json = serde_json::to_vec(&v).unwrap();
        let mut out = json.clone();
        if checksum && json.last() == Some(&b'}') {
            let mut c = crc32fast::Hasher::new();
            c.update(&json);
            c.update(b"\n");
            c.update(body);
            out.pop();
            let sep = if json.len() > 2 { "," } else { "" };
            out.extend_from_slice(
                format!("{sep}\"checksum\":\"crc32:{:08x}\"}}", c.finalize()).as_bytes(),
            );
        }
        out.push(b'\n');
        out.extend_from_slice(body);
        out
    }

    /// `v` with the value at the JSON pointer `path` replaced by `new`, or removed when `new`
    /// is `None`.
    fn with(v: &Value, path: &str, new: Option<Value>) -> Value {
        let mut v = v.clone();
        let (parent, key) = path.rsplit_once('/').unwrap();
        let obj = v.pointer_mut(parent).unwrap();
        match (obj, new) {
            (Value::Object(o), Some(n)) => {
                o.insert(key.to_string(), n);
            }
            (Value::Object(o), None) => {
                o.remove(key);
            }
            (Value::Array(a), Some(n)) => a[key.parse::<usize>().unwrap()] = n,
            (Value::Array(a), None) => {
                a.remove(key.parse::<usize>().unwrap());
            }
            _ => panic!("bad path {path}"),
        }
        v
    }

    /// Reads `bytes`; when that succeeds, uses the model the ways `smi predict` and
    /// `smi inspect` do, and saves it again. Any of these may fail, none may panic, and a
    /// model that saves must read back.
    pub(crate) fn exercise(bytes: &[u8]) -> Result<()> {
        let m = ModelFile::from_bytes(bytes, "m")?;
        let _ = super::super::inspect::summary(&m, "m");
        if let Ok(again) = m.to_bytes() {
            let back = ModelFile::from_bytes(&again, "m").expect("a saved model reads back");
            assert_eq!(back.payload, m.payload);
        }
        let h = &m.header;
        let fitted = m.fitted()?;
        let cols = h.features.len();
        let x = Matrix::from_fn(3, cols, |i, j| (i as f64 - 1.0) * (j as f64 + 0.5));
        match h.task {
            Task::Regression => {
                let y = [0.0, 1.0, -2.0];
                let o =
                    super::super::predict::predict_regression(h, &fitted, &x, 3, 0.9, 1, Some(&y))?;
                let _ = super::super::predict::regression_metrics(&o, &y, 0.9);
            }
            Task::Classification => {
                let o = super::super::predict::predict_classes(h, &fitted, &x, 3, 1)?;
                let _ = super::super::predict::class_metrics(&o, &[0, 1, 0]);
            }
        }
        Ok(())
    }

    #[test]
    fn round_trip_and_errors() {
        let m = sample();
        let b = m.to_bytes().unwrap();
        let back = ModelFile::from_bytes(&b, "m").unwrap();
        let sum = back.header.checksum.clone().expect("a checksum");
        assert!(parse_checksum(&sum).is_some(), "{sum}");
        let line =
            String::from_utf8_lossy(&b[..b.iter().position(|&c| c == b'\n').unwrap()]).into_owned();
        assert!(
            line.ends_with(&format!(",\"checksum\":\"{sum}\"}}")),
            "{line}"
        );
        assert_eq!(
            back.header,
            Header {
                checksum: Some(sum),
                ..m.header.clone()
            }
        );
        assert_eq!(back.payload, m.payload);
        let e = ModelFile::from_bytes(&b[..b.len() - 5], "m").unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let e = ModelFile::from_bytes(&b[..20], "m").unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        let e = ModelFile::from_bytes(b"hello\nworld", "m").unwrap_err();
        assert!(e.to_string().contains("not an smi model"), "{e}");
        let s =
            String::from_utf8_lossy(&b).replacen("\"format_version\":1", "\"format_version\":7", 1);
        let e = ModelFile::from_bytes(s.as_bytes(), "m").unwrap_err();
        assert!(e.to_string().contains("version 7"), "{e}");
        let mut c = b.clone();
        c[30] = b'#';
        assert!(ModelFile::from_bytes(&c, "m").is_err());
        assert!(ModelFile::from_bytes(b"", "m").is_err());
        let c = classifier().to_bytes().unwrap();
        exercise(&c).unwrap();
        exercise(&b).unwrap();
    }

    /// Any flipped bit of the payload, or a changed value in the header, fails the checksum.
    #[test]
    fn flipped_bytes_fail_the_checksum() {
        let b = sample().to_bytes().unwrap();
        let nl = b.iter().position(|&c| c == b'\n').unwrap();
        for i in [nl + 1, nl + 9, b.len() / 2 + nl / 2, b.len() - 1] {
            for bit in [0, 3, 7] {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                let e = ModelFile::from_bytes(&c, "m.smi").unwrap_err().to_string();
                assert!(
                    e.contains("m.smi is corrupt: its checksum does not match"),
                    "byte {i} bit {bit}: {e}"
                );
            }
        }
        // A header value changed by hand (the standardisation of the input): still valid JSON
        // and a consistent header, caught by the checksum alone.
        let text = String::from_utf8(b[..nl].to_vec()).unwrap();
        let edited = text.replacen("\"std\":[2.0]", "\"std\":[3.0]", 1);
        assert_ne!(edited, text);
        let mut c = edited.into_bytes();
        c.extend_from_slice(&b[nl..]);
        let e = ModelFile::from_bytes(&c, "m").unwrap_err().to_string();
        assert!(e.contains("checksum does not match"), "{e}");
        // A bad or misplaced checksum member.
        let (v, body) = split(&b);
        let bad = with(&v, "/checksum", Some(Value::from("crc32:xyz")));
        let mut c = serde_json::to_vec(&bad).unwrap();
        c.push(b'\n');
        c.extend_from_slice(&body);
        let e = ModelFile::from_bytes(&c, "m").unwrap_err().to_string();
        assert!(e.contains("is not \"crc32:\" and 8 hex digits"), "{e}");
        let moved = text.replacen(
            "{\"magic\"",
            &format!(
                "{{\"checksum\":\"{}\",\"magic\"",
                v["checksum"].as_str().unwrap()
            ),
            1,
        );
        let moved = moved.replacen(
            &format!(",\"checksum\":\"{}\"}}", v["checksum"].as_str().unwrap()),
            "}",
            1,
        );
        let mut c = moved.into_bytes();
        c.extend_from_slice(&b[nl..]);
        let e = ModelFile::from_bytes(&c, "m").unwrap_err().to_string();
        assert!(e.contains("not the header's last member"), "{e}");
    }

    /// Files written before checksums are read (the caller warns), and still validated.
    #[test]
    fn files_without_a_checksum_are_read_and_validated() {
        for m in [sample(), classifier()] {
            let (v, body) = split(&m.to_bytes().unwrap());
            let old = encode(&v, &body, false);
            let back = ModelFile::from_bytes(&old, "m").unwrap();
            assert_eq!(back.header.checksum, None);
            assert_eq!(back.payload, m.payload);
            exercise(&old).unwrap();
        }
        // A damaged payload of an old file: named as such, not taken for a diverged fit.
        let (v, mut body) = split(&sample().to_bytes().unwrap());
        body[16..24].copy_from_slice(&f64::NAN.to_le_bytes());
        let e = ModelFile::from_bytes(&encode(&v, &body, false), "m")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m is corrupt: payload value at row 1, column 3 is NaN"),
            "{e}"
        );
        let (v, body) = split(&sample().to_bytes().unwrap());
        let e = ModelFile::from_bytes(
            &encode(
                &with(
                    &v,
                    "/y_scaler",
                    Some(serde_json::json!({"mean": [], "std": []})),
                ),
                &body,
                false,
            ),
            "m",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("y_scaler has 0 means"), "{e}");
    }

    /// Every inconsistent header is a clear error naming what is wrong, with or without a
    /// valid checksum.
    #[test]
    fn inconsistent_headers_are_clear_errors() {
        use serde_json::json;
        let reg = split(&sample().to_bytes().unwrap());
        let cls = split(&classifier().to_bytes().unwrap());
        // (model, JSON pointer, new value or None to remove, what the error must say)
        type Case<'a> = (&'a (Value, Vec<u8>), &'a str, Option<Value>, &'a str);
        let cases: Vec<Case> = vec![
            (&reg, "/y_scaler", Some(json!({"mean": [], "std": []})), "y_scaler has 0 means and 0 stds, but the model has 1 target"),
            (&reg, "/y_scaler", Some(json!({"mean": [1.0], "std": [0.0]})), "y_scaler.std holds a value that is not a positive"),
            (&reg, "/x_scaler", Some(json!({"mean": [], "std": []})), "x_scaler has 0 means and 0 stds, but the model has 1 inputs"),
            (&reg, "/x_scaler/std", Some(json!([-1.0])), "x_scaler.std holds a value that is not a positive"),
            (&reg, "/x_scaler/std", Some(json!([null])), "corrupt model header"),
            (&reg, "/features", Some(json!(["x", "z"])), "2 feature names for a network with 1 inputs"),
            (&reg, "/architecture/sizes", Some(json!([1, 3, 1])), "payload.dim is 8 but the network (architecture.sizes [1, 3, 1]) has d = 11"),
            (&reg, "/architecture/sizes", Some(json!([1, 2, 2])), "a regression network has one output"),
            (&reg, "/architecture/sizes", Some(json!([1])), "must hold an input width"),
            (&reg, "/architecture/sizes", Some(json!([1, 0, 1])), "none zero"),
            (&reg, "/architecture/sizes", Some(json!([1, usize::MAX, usize::MAX, 1])), "the parameter count overflows"),
            (&reg, "/architecture/noise", None, "a regression model without a noise model"),
            (&reg, "/architecture/noise", Some(json!({"Fixed": -1.0})), "the noise scale -1 is not a positive number"),
            (&reg, "/architecture/prior_scale", Some(json!(0.0)), "architecture.prior_scale 0 is not a positive number"),
            (&reg, "/classes", Some(json!(["a"])), "a regression model with class names"),
            (&reg, "/method", Some(json!("nuts")), "method nuts with a payload of particles"),
            (&reg, "/method", Some(json!("magic")), "unknown method \"magic\""),
            (&reg, "/payload/dim", Some(json!(9)), "payload.dim is 9 but"),
            (&reg, "/payload/cols", Some(json!(8)), "the payload has 8 values per row, but Normal particles (2d) of a network with d = 8 have 16"),
            (&reg, "/payload/rows", Some(json!(0)), "the payload has no rows"),
            (&reg, "/payload/rows", Some(json!(3)), "truncated"),
            (&reg, "/payload/rows", Some(json!(1)), "bytes follow the 128-byte payload"),
            (&reg, "/payload/rows", Some(json!(usize::MAX)), "the payload size"),
            (&reg, "/payload/guide", None, "particles without a guide"),
            (&reg, "/payload/kind", Some(json!("draws")), "NUTS draws with a guide"),
            (&reg, "/payload/encoding", Some(json!("f32-be")), "unknown payload encoding \"f32-be\""),
            (&cls, "/classes", Some(json!(["a", "b"])), "2 class names (classes) for a network with 3 outputs"),
            (&cls, "/classes", Some(json!(["a", "b", "c", "d"])), "4 class names (classes) for a network with 3 outputs"),
            (&cls, "/classes", Some(json!(["a", "b", "a"])), "the class \"a\" is listed twice"),
            (&cls, "/classes", None, "a classifier without class names"),
            (&cls, "/y_scaler", Some(json!({"mean": [0.0], "std": [1.0]})), "a classifier with a target scaler"),
            (&cls, "/architecture/noise", Some(json!({"Fixed": 1.0})), "a classifier with a noise model"),
            (&cls, "/features", Some(json!(["u", "u"])), "the feature \"u\" is listed twice"),
            (&cls, "/payload/guide", Some(json!({"kind": "normal", "init_scale": 0.1})), "values per row, but Normal particles (2d)"),
        ];
        for (i, ((v, body), path, new, want)) in cases.into_iter().enumerate() {
            let changed = with(v, path, new);
            for checksum in [true, false] {
                let bytes = encode(&changed, body, checksum);
                let e = match ModelFile::from_bytes(&bytes, "m.smi") {
                    Ok(_) => panic!("case {i} ({path}) was accepted"),
                    Err(e) => e.to_string(),
                };
                assert!(e.contains(want), "case {i} ({path}): {want:?} not in {e:?}");
                assert!(e.starts_with("m.smi"), "case {i}: {e}");
            }
        }
    }

    /// A header or payload with a non-finite number is refused when saving, naming it.
    #[test]
    fn non_finite_numbers_are_never_written() {
        let mut m = sample();
        m.header.x_scaler.std[0] = f64::INFINITY;
        let e = m.to_bytes().unwrap_err().to_string();
        assert!(
            e.contains("x_scaler.std holds a value that is not a finite number"),
            "{e}"
        );
        let mut m = sample();
        m.header.training.seconds = f64::NAN;
        let e = m.to_bytes().unwrap_err().to_string();
        assert!(e.contains("training.seconds"), "{e}");
        let mut m = sample();
        m.header.y_scaler = Some(Scaler {
            mean: vec![f64::NAN],
            std: vec![1.0],
        });
        assert!(m
            .to_bytes()
            .unwrap_err()
            .to_string()
            .contains("y_scaler.mean"));
        let mut m = sample();
        m.payload = Matrix::from_fn(2, 16, |i, j| {
            if (i, j) == (1, 4) {
                f64::NEG_INFINITY
            } else {
                0.0
            }
        });
        let e = m.to_bytes().unwrap_err().to_string();
        assert!(
            e.contains("not finite (row 2, column 5 is -inf): the fit diverged"),
            "{e}"
        );
        let mut m = sample();
        m.header.classes = Some(vec!["a".into()]);
        let e = format!("{:#}", m.to_bytes().unwrap_err());
        assert!(
            e.contains("inconsistent") && e.contains("class names"),
            "{e}"
        );
    }

    /// The proptest configuration: 256 cases unless `PROPTEST_CASES` says otherwise.
    pub(crate) fn config() -> ProptestConfig {
        let mut c = ProptestConfig::with_cases(256);
        if let Some(n) = std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            c.cases = n;
        }
        c
    }

    /// Leaf paths of the header that a mutation may replace.
    const PATHS: [&str; 24] = [
        "/task",
        "/method",
        "/architecture/sizes",
        "/architecture/sizes/0",
        "/architecture/sizes/1",
        "/architecture/activation",
        "/architecture/noise",
        "/architecture/prior_scale",
        "/features",
        "/x_scaler/mean",
        "/x_scaler/std",
        "/x_scaler/std/0",
        "/y_scaler",
        "/classes",
        "/payload/kind",
        "/payload/guide",
        "/payload/rows",
        "/payload/cols",
        "/payload/dim",
        "/payload/encoding",
        "/settings/seed",
        "/training",
        "/validation",
        "/format_version",
    ];

    /// Arbitrary JSON values of the kinds a header holds, small and extreme.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (0u64..40).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            prop::sample::select(vec![0.0, -1.0, 1e-300, 1e300, f64::MAX, 0.5])
                .prop_map(Value::from),
            prop::sample::select(vec![
                "a",
                "",
                "smi",
                "nuts",
                "svgd",
                "draws",
                "particles",
                "regression",
                "classification",
                "Tanh",
                "f64-le",
                "crc32:00000000"
            ])
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "mean",
                            "std",
                            "kind",
                            "init_scale",
                            "Fixed",
                            "shape",
                            "rate"
                        ]),
                        inner
                    ),
                    0..3
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    /// Finite numbers, ordinary and extreme.
    fn finite_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            -10.0..10.0f64,
            prop::sample::select(vec![
                0.0,
                -0.0,
                1e-300,
                -1e-300,
                5e-324,
                1e300,
                -1e300,
                f64::MAX,
                f64::MIN,
                700.0,
                -700.0,
            ]),
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
        ]
    }
    proptest! {
        #![proptest_config(config())]

        /// Arbitrary bytes: an error or a model, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
            let _ = exercise(&bytes);
            let mut with_magic = b"{\"magic\":\"smi-model\",\"format_version\":1,".to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = exercise(&with_magic);
        }

        /// A valid file with bytes replaced, cut or inserted: an error or a model that
        /// predicts, never a panic.
        #[test]
        fn mutated_files_never_panic(
            which in any::<bool>(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            cut in prop::option::of(any::<prop::sample::Index>()),
            insert in prop::option::of((any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..8))),
            checksum in any::<bool>(),
        ) {
            let m = if which { sample() } else { classifier() };
            let (v, body) = split(&m.to_bytes().unwrap());
            let mut b = encode(&v, &body, checksum);
            for (i, x) in edits {
                let i = i.index(b.len());
                b[i] = x;
            }
            if let Some((i, ins)) = insert {
                let i = i.index(b.len());
                b.splice(i..i, ins);
            }
            if let Some(c) = cut {
                b.truncate(c.index(b.len() + 1));
            }
            let _ = exercise(&b);
        }

        /// A well-formed header and payload with extreme finite numbers in the scalers, the
        /// prior, the noise and the parameters, re-signed: the model reads, and predicting
        /// with it gives predictions or an error, never a panic.
        #[test]
        fn extreme_values_never_panic(
            which in any::<bool>(),
            values in prop::collection::vec(finite_f64(), 8),
            payload in prop::collection::vec((any::<prop::sample::Index>(), finite_f64()), 0..6),
            y_scaled in any::<bool>(),
        ) {
            let mut m = if which { sample() } else { classifier() };
            let h = &mut m.header;
            h.x_scaler.mean[0] = values[0];
            h.x_scaler.std[0] = values[1].abs().max(f64::MIN_POSITIVE);
            h.architecture.prior_scale = values[2].abs().max(f64::MIN_POSITIVE);
            if h.task == Task::Regression {
                h.architecture.noise = Some(Noise::GammaPrecision {
                    shape: values[3].abs().max(1e-300),
                    rate: values[4].abs().max(1e-300),
                });
                if y_scaled {
                    h.y_scaler = Some(Scaler {
                        mean: vec![values[5]],
                        std: vec![values[6].abs().max(f64::MIN_POSITIVE)],
                    });
                }
            }
            let mut p = m.payload.as_slice().to_vec();
            for (i, v) in payload {
                let i = i.index(p.len());
                p[i] = v;
            }
            m.payload = Matrix::from_vec(m.payload.rows(), m.payload.cols(), p).unwrap();
            let bytes = m.to_bytes().expect("finite values save");
            prop_assert!(ModelFile::from_bytes(&bytes, "m").is_ok());
            let _ = exercise(&bytes);
        }

        /// A header with fields replaced by arbitrary JSON, re-signed with a valid checksum
        /// (so that the validation, not the checksum, has to catch it), or without one: an
        /// error or a model that predicts, never a panic.
        #[test]
        fn mutated_headers_never_panic(
            which in any::<bool>(),
            changes in prop::collection::vec((prop::sample::select(PATHS.to_vec()), prop::option::of(json_value())), 1..4),
            checksum in any::<bool>(),
        ) {
            let m = if which { sample() } else { classifier() };
            let (mut v, body) = split(&m.to_bytes().unwrap());
            for (path, new) in changes {
                if let Some((parent, _)) = path.rsplit_once('/') {
                    if matches!(v.pointer(parent), Some(Value::Object(_)))
                        || matches!(v.pointer(parent), Some(Value::Array(a)) if path.rsplit('/').next().and_then(|k| k.parse::<usize>().ok()).is_some_and(|k| k < a.len()))
                    {
                        v = with(&v, path, new);
                    }
                }
            }
            let _ = exercise(&encode(&v, &body, checksum));
        }
    }
}
