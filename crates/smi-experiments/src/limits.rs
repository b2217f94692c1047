//! Up-front size checks: refuse an option value whose run could not fit in this machine's
//! memory, with an error naming the option, instead of allocating until the machine gives up.

use anyhow::{bail, Result};

/// Assumed memory when `/proc/meminfo` cannot be read (not Linux).
const FALLBACK_MEMORY: u64 = 64 << 30;

/// This machine's physical memory in bytes (`MemTotal` of `/proc/meminfo`; 64 GiB where it
/// cannot be read).
pub fn machine_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        })
        .unwrap_or(FALLBACK_MEMORY)
}

/// The product of `factors` in checked arithmetic (`None` on overflow).
pub fn product(factors: &[u64]) -> Option<u64> {
    factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f))
}

/// `bytes` in binary units, e.g. "23.6 GiB" ("512 bytes" below 1 KiB).
pub fn human(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Refuses `option` when `needed` bytes (`None`: beyond 64-bit arithmetic) exceed `available`;
/// `what` says what needs them.
///
/// # Errors
/// The refusal, naming `option` and both sizes.
pub fn check_memory(option: &str, what: &str, needed: Option<u64>, available: u64) -> Result<()> {
    match needed {
        None => {
            bail!("{option}: {what} would need more than 2^64 bytes of memory; use a smaller value")
        }
        Some(n) if n > available => bail!(
            "{option}: {what} would need at least {} of memory, more than this machine's {}; \
             use a smaller value",
            human(n.into()),
            human(available.into())
        ),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_the_option() {
        assert!(machine_memory() > 1 << 20);
        assert_eq!(product(&[2, 3, 4]), Some(24));
        assert_eq!(product(&[u64::MAX, 2]), None);
        assert!(check_memory("--x", "it", Some(10), 10).is_ok());
        let e = check_memory("--x", "it", Some(11 << 30), 10 << 30).unwrap_err();
        assert!(e.to_string().contains("--x") && e.to_string().contains("11.0 GiB"));
        let e = check_memory("--x", "it", None, 10).unwrap_err();
        assert!(e.to_string().contains("--x"));
    }
}
