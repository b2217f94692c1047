//! Progress bars (indicatif) as `smi::Observer`s; hidden when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smi::{Observer, Progress};

/// Steps over which the displayed ELBO is smoothed: an exponential moving average with weight
/// 1/`ELBO_SPAN` on each new estimate (bias-corrected, so the first steps show their mean).
const ELBO_SPAN: f64 = 100.0;

/// A progress bar over steps showing the running loss and the smoothed ELBO estimate.
pub struct Bar {
    bar: ProgressBar,
    every: u64,
    elbo: SmoothedElbo,
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
        Bar {
            bar,
            every: every.max(1),
            elbo: SmoothedElbo::default(),
        }
    }
}

impl Observer for Bar {
    fn on_start(&mut self, total: u64) {
        self.bar.set_length(total);
    }

    fn on_step(&mut self, p: &Progress) {
        self.elbo.push(p.elbo);
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
