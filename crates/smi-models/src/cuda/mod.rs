//! The CUDA backend of the built-in BNNs (cargo feature `cuda`) and the [`Device`] choice.
//!
//! [`Device`] is always there, so settings and command lines can name a device in every
//! build; the backend itself needs the `cuda` feature, which builds without CUDA installed:
//! cudarc loads libcuda, cuBLAS and NVRTC at run time, and `Gpu::new` says which one is
//! missing. The design (what runs where, what crosses PCIe) is in docs/cuda.md.
//!
//! With the feature: `CudaSteinVi` (an [`smi::Engine`]: SMI with the ELBO gradients of every
//! draw on the GPU), `CudaStep` (that device part alone), `Gpu`, `CudaError`, the kernels'
//! source (`kernels::SOURCE`) and `compile_kernels` (NVRTC only, no GPU), and the host
//! versions of the device's random streams (`philox`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[cfg(feature = "cuda")]
mod context;
#[cfg(feature = "cuda")]
mod engine;
#[cfg(feature = "cuda")]
mod error;
#[cfg(feature = "cuda")]
pub mod kernels;
#[cfg(feature = "cuda")]
mod net;
#[cfg(feature = "cuda")]
pub mod philox;
#[cfg(feature = "cuda")]
mod products;
#[cfg(feature = "cuda")]
mod profile;
#[cfg(feature = "cuda")]
mod resident;
#[cfg(feature = "cuda")]
mod step;
#[cfg(all(test, feature = "cuda"))]
mod tests;

#[cfg(feature = "cuda")]
pub use context::{compile_kernels, driver_present, nvrtc_present, Gpu};
#[cfg(feature = "cuda")]
pub use engine::CudaSteinVi;
#[cfg(feature = "cuda")]
pub use error::CudaError;
#[cfg(feature = "cuda")]
pub use profile::PhaseTime;
#[cfg(feature = "cuda")]
pub use step::{CudaStep, StepOutput, StepRows};

/// Where the model work of a step runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "ordinal", rename_all = "snake_case")]
pub enum Device {
    /// The CPU (rayon threads); the default.
    #[default]
    Cpu,
    /// CUDA device `ordinal` (0 = the first GPU); needs the `cuda` feature.
    Cuda(usize),
}

impl Device {
    /// Whether this build has the CUDA backend (the `cuda` feature).
    pub const CUDA_BUILT: bool = cfg!(feature = "cuda");

    /// Checks that this build can run on the device (not that the device is there: opening it
    /// says that, with a `CudaError`).
    ///
    /// # Errors
    /// [`smi::Error::Unsupported`] for [`Device::Cuda`] in a build without the `cuda` feature.
    pub fn check_built(self) -> smi::Result<()> {
        match self {
            Device::Cuda(_) if !Self::CUDA_BUILT => Err(smi::Error::Unsupported(
                "this build has no CUDA backend: rebuild with `cargo build --release \
                 --features cuda` (or run on the CPU with --device cpu)"
                    .into(),
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(0) => write!(f, "cuda"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl FromStr for Device {
    type Err = smi::Error;

    /// `cpu`, `cuda` (device 0) or `cuda:N`.
    fn from_str(s: &str) -> smi::Result<Self> {
        let bad = || {
            smi::Error::invalid(
                "device",
                format!("unknown device {s:?}; valid: cpu, cuda, cuda:N (N = 0, 1, …)"),
            )
        };
        match s {
            "cpu" => Ok(Device::Cpu),
            "cuda" | "gpu" => Ok(Device::Cuda(0)),
            _ => {
                let n = s.strip_prefix("cuda:").ok_or_else(bad)?;
                n.parse().map(Device::Cuda).map_err(|_| bad())
            }
        }
    }
}

#[cfg(test)]
mod device_tests {
    use super::*;

    #[test]
    fn devices_parse_and_print() {
        for (s, d) in [
            ("cpu", Device::Cpu),
            ("cuda", Device::Cuda(0)),
            ("cuda:3", Device::Cuda(3)),
        ] {
            assert_eq!(s.parse::<Device>().unwrap(), d);
            assert_eq!(d.to_string(), s);
        }
        assert_eq!("gpu".parse::<Device>().unwrap(), Device::Cuda(0));
        let e = "tpu".parse::<Device>().unwrap_err().to_string();
        assert!(e.contains("cuda:N"), "{e}");
        assert!("cuda:x".parse::<Device>().is_err());
        assert!(Device::Cpu.check_built().is_ok());
        let built = Device::Cuda(0).check_built();
        assert_eq!(built.is_ok(), Device::CUDA_BUILT);
        if let Err(e) = built {
            assert!(e.to_string().contains("--features cuda"), "{e}");
        }
    }
}
