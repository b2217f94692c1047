//! Progress bars (indicatif) as `smi::Observer`s. When stderr is not a terminal (a run in the
//! background with its output in a file) the bar is hidden and a plain line is printed instead
//! at most once per [`PLAIN_EVERY`], so a long unit still shows that it is alive.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smi::{Observer, Progress};

/// The least time between two plain progress lines (stderr not a terminal): one minute.
pub const PLAIN_EVERY: Duration = Duration::from_secs(60);

/// Steps over which the displayed ELBO is smoothed: an exponential moving average with weight
/// 1/`ELBO_SPAN` on each new estimate (bias-corrected, so the first steps show their mean).
const ELBO_SPAN: f64 = 100.0;

/// A progress bar over steps showing the running loss and the smoothed ELBO estimate.
pub struct Bar {
    bar: ProgressBar,
    every: u64,
    elbo: SmoothedElbo,
    /// The plain-line log, when stderr is not a terminal.
    plain: Option<PlainLog>,
}

/// Plain progress lines: the label, and when the last line was printed (or the run started).
struct PlainLog {
    label: String,
    last: Instant,
}

/// A plain progress line: "`label`: step s/t (p %), loss …, elbo …".
fn plain_line(label: &str, p: &Progress, elbo: Option<f64>) -> String {
    let pct = if p.total > 0 {
        100.0 * p.step as f64 / p.total as f64
    } else {
        0.0
    };
    let mut line = format!(
        "{label}: {} {}/{} ({pct:.0} %), loss {:.4}",
        p.phase, p.step, p.total, p.loss
    );
    if let Some(e) = elbo {
        line.push_str(&format!(", elbo {e:.4}"));
    }
    line
}

/// A bias-corrected exponential moving average of the finite ELBO estimates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SmoothedElbo {
    /// Σ weights·values and Σ weights of the average (the ratio is the bias-corrected mean).
    num: f64,
    den: f64,
}

impl SmoothedElbo {
    fn push(&mut self, elbo: f64) {
        if elbo.is_finite() {
            let keep = 1.0 - 1.0 / ELBO_SPAN;
            self.num = keep * self.num + elbo;
            self.den = keep * self.den + 1.0;
        }
    }

    /// The smoothed value, `None` before the first finite estimate.
    fn value(&self) -> Option<f64> {
        (self.den > 0.0).then(|| self.num / self.den)
    }
}

impl Bar {
    /// A bar labelled `label`; redraws every `every` steps.
    pub fn new(label: &str, every: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>24} [{bar:30}] {pos}/{len} {per_sec} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        let plain = (!std::io::stderr().is_terminal()).then(|| PlainLog {
            label: label.to_string(),
            last: Instant::now(),
        });
        Bar {
            bar,
            every: every.max(1),
            elbo: SmoothedElbo::default(),
            plain,
        }
    }
}

impl Observer for Bar {
    fn on_start(&mut self, total: u64) {
        self.bar.set_length(total);
        if let Some(log) = &mut self.plain {
            log.last = Instant::now();
        }
    }

    fn on_step(&mut self, p: &Progress) {
        self.elbo.push(p.elbo);
        if let Some(log) = &mut self.plain {
            if log.last.elapsed() >= PLAIN_EVERY && p.step < p.total {
                eprintln!("{}", plain_line(&log.label, p, self.elbo.value()));
                log.last = Instant::now();
            }
        }
        if p.step.is_multiple_of(self.every) || p.step == p.total {
            self.bar.set_position(p.step);
            let msg = match self.elbo.value() {
                Some(e) => format!("loss {:.4} elbo {e:.4}", p.loss),
                None => format!("loss {:.4}", p.loss),
            };
            self.bar.set_message(msg);
        }
    }

    fn on_finish(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line_names_the_unit_the_step_and_the_values() {
        let p = Progress::new(1500, 15000, 0.25, "fit");
        assert_eq!(
            plain_line("wave smi moderate #3", &p, Some(-12.5)),
            "wave smi moderate #3: fit 1500/15000 (10 %), loss 0.2500, elbo -12.5000"
        );
        let q = Progress::new(0, 0, 1.0, "warmup");
        assert_eq!(
            plain_line("nuts", &q, None),
            "nuts: warmup 0/0 (0 %), loss 1.0000"
        );
    }

    #[test]
    fn the_smoothed_elbo_is_the_mean_at_first_and_skips_missing_values() {
        let mut s = SmoothedElbo::default();
        assert_eq!(s.value(), None);
        s.push(f64::NAN);
        assert_eq!(s.value(), None);
        s.push(2.0);
        assert_eq!(s.value(), Some(2.0));
        // Two values: weights 0.99 and 1, so (0.99·2 + 4)/1.99.
        s.push(4.0);
        assert!((s.value().unwrap() - (0.99 * 2.0 + 4.0) / 1.99).abs() < 1e-12);
        // A long constant run forgets the start.
        for _ in 0..5000 {
            s.push(-7.0);
        }
        assert!((s.value().unwrap() + 7.0).abs() < 1e-9);
    }
}
