//! The process's CPU time, recorded beside wall time (a checkpoint's seconds, a unit's cost)
//! so that a cost stays honest when the machine was shared or the run was paused.

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

#[cfg(test)]
mod tests {
    use super::*;

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
