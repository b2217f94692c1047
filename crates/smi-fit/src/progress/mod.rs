//! Progress of a fit: a bar on a terminal, plain lines every few seconds otherwise (a log file, a
//! pipe, a batch job), nothing under `SMI_NO_PROGRESS`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use smi::{Observer, Progress};
mod bar;
pub use bar::{Bar, PLAIN_EVERY};

/// Where progress goes.
enum Sink {
    /// Nothing (`SMI_NO_PROGRESS` is set).
    Off,
    /// An indicatif bar (stderr is a terminal).
    Bar(Box<Bar>),
    /// Plain lines on stderr.
    Lines(Lines),
}

/// Plain progress lines at most every `every`.
struct Lines {
    label: String,
    every: Duration,
    total: u64,
    /// When the first step of this process was seen, and its step number (a resumed fit starts
    /// past 0; the rate counts this process's steps only).
    first: Option<(Instant, u64)>,
    last: Option<Instant>,
}

impl Lines {
    fn line(&mut self, p: &Progress) {
        let now = Instant::now();
        let (t0, s0) = *self.first.get_or_insert((now, p.step.saturating_sub(1)));
        if now.duration_since(self.last.unwrap_or(t0)) < self.every {
            return;
        }
        self.last = Some(now);
        let secs = now.duration_since(t0).as_secs_f64();
        let done = p.step.saturating_sub(s0);
        let left = if done > 0 && secs > 0.0 {
            let rest = self.total.saturating_sub(p.step) as f64 * secs / done as f64;
            format!(", about {} left at most", human_seconds(rest))
        } else {
            String::new()
        };
        let pct = if self.total > 0 {
            format!(" ({:.0} %)", 100.0 * p.step as f64 / self.total as f64)
        } else {
            String::new()
        };
        eprintln!(
            "{}: {} {}/{}{pct}, loss {:.4}, {} elapsed{left}",
            self.label,
            if p.phase == "fit" { "step" } else { p.phase },
            p.step,
            self.total,
            p.loss,
            human_seconds(secs)
        );
    }
}

/// "42 s", "3.5 min", "1.2 h".
pub fn human_seconds(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// The observer of one fit, labelled `label` (e.g. `"fit smi"`).
pub struct FitProgress {
    sink: Sink,
}

impl FitProgress {
    /// A bar when stderr is a terminal, otherwise a line at most every `every`; nothing when
    /// `every` is `None` or the environment variable `SMI_NO_PROGRESS` is set.
    pub fn new(label: &str, every: Option<Duration>) -> Self {
        let Some(every) = every else {
            return FitProgress { sink: Sink::Off };
        };
        let sink = if std::env::var_os("SMI_NO_PROGRESS").is_some() {
            Sink::Off
        } else if std::io::stderr().is_terminal() {
            Sink::Bar(Box::new(Bar::new(label, 10)))
        } else {
            return FitProgress::lines(label, every);
        };
        FitProgress { sink }
    }

    /// Plain lines at most every `every`, whatever stderr is (tests).
    pub fn lines(label: &str, every: Duration) -> Self {
        FitProgress {
            sink: Sink::Lines(Lines {
                label: label.to_string(),
                every,
                total: 0,
                first: None,
                last: None,
            }),
        }
    }
}

impl Observer for FitProgress {
    fn on_start(&mut self, total: u64) {
        match &mut self.sink {
            Sink::Off => {}
            Sink::Bar(b) => b.on_start(total),
            Sink::Lines(l) => l.total = total,
        }
    }

    fn on_step(&mut self, p: &Progress) {
        match &mut self.sink {
            Sink::Off => {}
            Sink::Bar(b) => b.on_step(p),
            Sink::Lines(l) => {
                l.total = l.total.max(p.total);
                l.line(p);
            }
        }
    }

    fn on_finish(&mut self) {
        if let Sink::Bar(b) = &mut self.sink {
            b.on_finish();
        }
    }
}
