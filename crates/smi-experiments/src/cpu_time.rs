//! The process's CPU time (the clock is the core's, [`smi::CpuClock`]) summed over the units of
//! a report's table cell ([`CpuTotal`]).

pub use smi::{process_cpu_seconds, CpuClock};

/// CPU time summed over the units of a table cell, for the reports' "CPU h" columns: records
/// from binaries older than the `cpu_seconds` field lack it, so the sum says how many units it
/// covers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTotal {
    /// Sum of the units' CPU seconds that are known.
    pub seconds: f64,
    /// Units whose CPU seconds are known.
    pub counted: usize,
    /// All units.
    pub units: usize,
}

impl CpuTotal {
    /// The total of one value per unit (`None` or a non-finite value: unknown).
    pub fn of(seconds: impl IntoIterator<Item = Option<f64>>) -> Self {
        seconds.into_iter().fold(CpuTotal::default(), |t, s| {
            let s = s.filter(|v| v.is_finite());
            CpuTotal {
                seconds: t.seconds + s.unwrap_or(0.0),
                counted: t.counted + usize::from(s.is_some()),
                units: t.units + 1,
            }
        })
    }

    /// CPU hours as a table cell: `1.23`; `0.41 (2 of 3)` when some units lack their CPU time
    /// (the sum covers only those that have it); `< 0.001` below 3.6 s; `–` when none has it.
    pub fn hours_cell(&self) -> String {
        if self.counted == 0 {
            return "–".to_string();
        }
        let h = self.seconds / 3600.0;
        let text = if h >= 10.0 {
            format!("{h:.1}")
        } else if h >= 0.1 {
            format!("{h:.2}")
        } else if h >= 0.001 {
            format!("{h:.3}")
        } else {
            "< 0.001".to_string()
        };
        if self.counted == self.units {
            text
        } else {
            format!("{text} ({} of {})", self.counted, self.units)
        }
    }
}

/// The caption sentence of a "CPU h" column.
pub const CPU_HOURS_NOTE: &str = "CPU h: process CPU time (user + system, all threads) summed \
    over the units shown; \"(k of n)\": only k of the n units carry it (records from binaries \
    older than the `cpu_seconds` field lack it), so the sum covers those k; \"–\": none does.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_totals_count_the_units_that_have_it() {
        let t = CpuTotal::of([Some(3600.0), None, Some(1800.0), Some(f64::NAN)]);
        assert_eq!((t.counted, t.units), (2, 4));
        assert_eq!(t.hours_cell(), "1.50 (2 of 4)");
        assert_eq!(CpuTotal::of([Some(36.0)]).hours_cell(), "0.010");
        assert_eq!(CpuTotal::of([Some(36_000.0)]).hours_cell(), "10.0");
        assert_eq!(CpuTotal::of([Some(3.0)]).hours_cell(), "< 0.001");
        assert_eq!(CpuTotal::of([None]).hours_cell(), "–");
    }
}
