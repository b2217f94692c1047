//! Ctrl-C (SIGINT) and SIGTERM during a fit: the first one sets a flag that the training loop
//! checks between steps (it then saves the model as it is and a checkpoint); a second one ends
//! the process at once with status 130.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

/// The exit status of a fit ended by Ctrl-C (128 + SIGINT, as a shell reports it).
pub const INTERRUPTED_STATUS: i32 = 130;

/// A flag raised by the first Ctrl-C or SIGTERM after [`Interrupt::install`].
#[derive(Clone, Debug)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Installs the handlers: from now on the first SIGINT or SIGTERM raises the flag instead
    /// of ending the process, and the next one ends it with [`INTERRUPTED_STATUS`].
    ///
    /// # Errors
    /// When the operating system refuses a handler.
    pub fn install() -> Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // Registered first, so it sees the flag as it was before this signal: the second
            // signal finds it raised and exits.
            signal_hook::flag::register_conditional_shutdown(
                sig,
                INTERRUPTED_STATUS,
                Arc::clone(&flag),
            )
            .context("cannot install the Ctrl-C handler")?;
            signal_hook::flag::register(sig, Arc::clone(&flag))
                .context("cannot install the Ctrl-C handler")?;
        }
        Ok(Interrupt(flag))
    }

    /// A flag no signal raises (for fits that are not to be interrupted, and tests).
    pub fn never() -> Self {
        Interrupt(Arc::new(AtomicBool::new(false)))
    }

    /// Whether a signal arrived.
    pub fn raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Raises the flag by hand (tests).
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
