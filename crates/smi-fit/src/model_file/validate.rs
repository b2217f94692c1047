//! One validation of a model file's header against its architecture, before anything is used.

use super::*;

/// d of a network with layer widths `sizes` (Σ_l (n_l + 1)·n_{l+1} over the widths n_l), `None` when it
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
        if let Some(t) = self.settings.temperature {
            if !(t.is_finite() && t > 0.0) {
                bail!("settings.temperature {t} is not a positive number");
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
            (PayloadKind::Particles, Some(g)) => g.checked_param_dim(d),
            (PayloadKind::Particles, None) => bail!("particles without a guide (payload.guide)"),
            (PayloadKind::Draws, None) => Some(d),
            (PayloadKind::Draws, Some(_)) => bail!("NUTS draws with a guide (payload.guide)"),
        };
        if cols != Some(p.cols) {
            bail!(
                "the payload has {} values per row, but {} of a network with d = {d} have {}",
                p.cols,
                match p.guide {
                    Some(GuideSettings::Normal { .. }) => "Normal particles (2d)".to_string(),
                    Some(g @ GuideSettings::LowRank { .. }) => format!("{} particles", g.name()),
                    Some(GuideSettings::FullRank { .. }) => "full-rank particles".to_string(),
                    Some(GuideSettings::Delta) => "point-mass particles (d)".to_string(),
                    None => "NUTS draws (d)".to_string(),
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
        let checks: [(&'static str, bool); 15] = [
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
            ("settings.temperature", opt(s.temperature)),
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
                self.payload.guide.is_some_and(|g| g.validate().is_err()),
            ),
        ];
        checks.into_iter().find(|c| c.1).map(|c| c.0)
    }
}

/// The first non-finite value of `m`: (row, column, value).
pub(super) fn first_non_finite(m: &Matrix) -> Option<(usize, usize, f64)> {
    let cols = m.cols().max(1);
    m.as_slice()
        .iter()
        .position(|v| !v.is_finite())
        .map(|i| (i / cols, i % cols, m.as_slice()[i]))
}

/// The stored checksum of a `"crc32:xxxxxxxx"` string.
pub(super) fn parse_checksum(s: &str) -> Option<u32> {
    let hex = s.strip_prefix("crc32:")?;
    if hex.len() != 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}
