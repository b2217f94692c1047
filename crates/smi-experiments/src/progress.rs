//! Progress bars (indicatif) as `smi::Observer`s; hidden when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smi::{Observer, Progress};

/// A progress bar over steps showing the running loss.
pub struct Bar {
    bar: ProgressBar,
    every: u64,
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
        }
    }
}

impl Observer for Bar {
    fn on_start(&mut self, total: u64) {
        self.bar.set_length(total);
    }

    fn on_step(&mut self, p: &Progress) {
        if p.step.is_multiple_of(self.every) || p.step == p.total {
            self.bar.set_position(p.step);
            self.bar.set_message(format!("loss {:.4}", p.loss));
        }
    }

    fn on_finish(&mut self) {
        self.bar.finish_and_clear();
    }
}
