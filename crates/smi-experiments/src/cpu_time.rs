//! The process's CPU time, recorded next to wall time so that a unit's cost stays honest when
//! the machine was shared or the run was paused (wall time then overstates it), and its sum over
//! the units of a report's table cell ([`CpuTotal`]).

/// CPU seconds (user + system, all threads) used by this process so far, from
/// `/proc/self/stat` (Linux, whose clock-tick unit is fixed at 100 per second for this file);
/// `None` where that file is missing or unreadable.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command name: state is field 3, utime field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Measures the CPU seconds of a stretch of work: [`CpuClock::start`] before it,
/// [`CpuClock::seconds`] after.
#[derive(Clone, Copy, Debug)]
pub struct CpuClock(Option<f64>);

impl CpuClock {
    /// Reads the process's CPU time now.
    pub fn start() -> Self {
        CpuClock(process_cpu_seconds())
    }

    /// CPU seconds (all threads of the process) since [`CpuClock::start`]; `None` where they
    /// cannot be read. Work of other threads of the process running meanwhile counts too.
    pub fn seconds(&self) -> Option<f64> {
        Some(process_cpu_seconds()? - self.0?)
    }
}

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

    #[test]
    fn cpu_clock_counts_busy_work() {
        let Some(before) = process_cpu_seconds() else {
            // Not Linux: nothing to measure, and the clock says so.
            assert!(CpuClock::start().seconds().is_none());
            return;
        };
        assert!(before >= 0.0);
        let clock = CpuClock::start();
        // Spin until the process has used at least 0.05 CPU s more (5 ticks), bounded by
        // 10⁹ square roots (seconds of work) so that a clock that never advances fails.
        let mut x = 1.0f64;
        for _ in 0..10_000 {
            if clock.seconds().unwrap_or(0.0) >= 0.05 {
                break;
            }
            for i in 0..100_000 {
                x = (x * 1.000_001 + f64::from(i)).sqrt();
            }
        }
        assert!(x.is_finite());
        assert!(clock.seconds().is_some_and(|s| s >= 0.05));
    }
}
