//! Size checks before large allocations.
//!
//! A size on the command line (`--hidden 100000000`, `--particles 1000000000`,
//! `--draws 100000000000`) multiplies into buffers that no machine holds; allocating them
//! aborts the process. Before fitting or predicting, the biggest buffers are sized here with
//! checked arithmetic and compared with the machine's physical memory ([`machine_memory`]); a
//! run that cannot fit is refused with a message naming the flags that size it.
//!
//! The sizes are lower bounds of what the run allocates (the largest buffers only), so a run
//! that is refused could never have worked, and one that passes may still be too big for the
//! memory that is free at the time.

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

/// One buffer of a run.
struct Item {
    /// What it holds, e.g. "the model draws of one step".
    what: String,
    /// The flags (with their values) that size it, e.g. "--particles 5, --hidden 50,50".
    flags: String,
    /// Its factors, with their meaning.
    factors: Vec<(u128, String)>,
}

impl Item {
    /// The size in bytes, `None` when it overflows even 128 bits.
    fn bytes(&self) -> Option<u128> {
        self.factors
            .iter()
            .try_fold(1u128, |acc, (v, _)| acc.checked_mul(*v))
    }

    fn detail(&self) -> String {
        self.factors
            .iter()
            .filter(|(v, _)| *v != 1)
            .map(|(v, what)| format!("{v} {what}"))
            .collect::<Vec<_>>()
            .join(" × ")
    }
}

/// The flag names of a "--a 1, --b 2,3" list: "--a or --b".
fn names(flags: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for f in flags {
        for part in f.split(", ") {
            let name = part.split_whitespace().next().unwrap_or(part);
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out.join(" or ")
}

/// The big buffers of one run, checked together against the machine's memory.
pub struct Budget {
    limit: u64,
    items: Vec<Item>,
}

impl Default for Budget {
    fn default() -> Self {
        Self::new()
    }
}

impl Budget {
    /// An empty budget against this machine's memory ([`machine_memory`]).
    pub fn new() -> Self {
        Self::with_limit(machine_memory())
    }

    /// An empty budget against `limit` bytes.
    pub fn with_limit(limit: u64) -> Self {
        Budget {
            limit,
            items: Vec::new(),
        }
    }

    /// Adds a buffer: `what` it holds, the `flags` that size it, and its `factors` (count and
    /// meaning, the element size among them, e.g. `(8, "bytes")`).
    pub fn add(&mut self, what: &str, flags: &str, factors: &[(usize, &str)]) {
        self.items.push(Item {
            what: what.to_string(),
            flags: flags.to_string(),
            factors: factors
                .iter()
                .map(|&(v, w)| (v as u128, w.to_string()))
                .collect(),
        });
    }

    /// Fails when one buffer, or all of them together, would need more than the limit; the
    /// message names the flags to reduce.
    pub fn check(&self) -> Result<()> {
        let limit = self.limit as u128;
        let mut total: u128 = 0;
        for it in &self.items {
            match it.bytes() {
                Some(b) if b <= limit => total = total.saturating_add(b),
                b => bail!(
                    "{}: {} would need {} ({}), more than this machine's {} of memory; \
                     reduce {}",
                    it.flags,
                    it.what,
                    b.map_or_else(|| "more bytes than can be counted".to_string(), human),
                    it.detail(),
                    human(limit),
                    names(&[&it.flags])
                ),
            }
        }
        if total > limit {
            let parts: Vec<String> = self
                .items
                .iter()
                .filter_map(|it| Some(format!("{} {}", it.what, human(it.bytes()?))))
                .collect();
            bail!(
                "this run would need {} of memory ({}), more than this machine's {}; reduce {}",
                human(total),
                parts.join(", "),
                human(limit),
                names(
                    &self
                        .items
                        .iter()
                        .map(|it| it.flags.as_str())
                        .collect::<Vec<_>>()
                )
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_does_not_fit_naming_the_flags() {
        assert!(machine_memory() > 0);
        assert_eq!(human(512), "512 bytes");
        assert_eq!(human(3 << 30), "3.0 GiB");

        let mut b = Budget::with_limit(1 << 30);
        b.add(
            "the particles",
            "--particles 5",
            &[(5, "particles"), (8, "bytes")],
        );
        b.check().unwrap();
        b.add(
            "the draws",
            "--draws 100000000000",
            &[(100_000_000_000, "draws"), (8, "bytes")],
        );
        let e = b.check().unwrap_err().to_string();
        assert!(
            e.starts_with("--draws 100000000000: the draws would need"),
            "{e}"
        );
        assert!(e.ends_with("reduce --draws"), "{e}");
        let mut b = Budget::with_limit(1 << 30);
        b.add(
            "a",
            "--x 1",
            &[(usize::MAX, "a"), (usize::MAX, "b"), (9, "c")],
        );
        let e = b.check().unwrap_err().to_string();
        assert!(e.contains("more bytes than can be counted"), "{e}");
        let mut b = Budget::with_limit(100);
        b.add("a", "--x 1", &[(60, "bytes")]);
        b.add("b", "--y 2", &[(60, "bytes")]);
        let e = b.check().unwrap_err().to_string();
        assert!(
            e.contains("120 bytes") && e.ends_with("reduce --x or --y"),
            "{e}"
        );
        assert_eq!(
            names(&["--a 1, --hidden 50,50", "--a 2"]),
            "--a or --hidden"
        );
    }

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
