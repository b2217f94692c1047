//! The engine of a method on a device: the core's engine on the CPU, the CUDA engine of
//! `smi-models` (SMI on the built-in networks) on a GPU. One place for `smi bench`,
//! `smi reproduce uci` and `smi reproduce mnist` (docs/cuda.md).

use anyhow::{bail, Result};
use smi::{Engine, GradientReuse, LogDensity, MethodSettings};
use smi_models::{BnnClassifier, BnnRegression, Device};

/// A built-in network, the models with a GPU path.
#[derive(Clone, Copy, Debug)]
pub enum Net<'a> {
    /// The regression network (wave, UCI).
    Regression(&'a BnnRegression),
    /// The classifier (MNIST).
    Classifier(&'a BnnClassifier),
}

impl<'a> Net<'a> {
    /// The network as a log density.
    pub fn density(self) -> &'a dyn LogDensity {
        match self {
            Net::Regression(m) => m,
            Net::Classifier(m) => m,
        }
    }
}

/// The device a method's fits run on when SMI's run on `device`: SMI there, every other
/// method on the CPU (the GPU engine is SMI's).
pub fn for_method(method: &str, device: Device) -> Device {
    if method == "smi" {
        device
    } else {
        Device::Cpu
    }
}

/// The device of `--device NAME` for a run of `methods` (their names): parsed, built into
/// this binary, and running nothing but SMI when it is a GPU.
///
/// # Errors
/// An unknown name (the message lists the valid ones); a build without the CUDA backend; a
/// method other than SMI on a GPU.
pub fn parse_for<'m>(name: &str, methods: impl IntoIterator<Item = &'m str>) -> Result<Device> {
    let device: Device = name.parse()?;
    device.check_built()?;
    if device != Device::Cpu {
        if let Some(other) = methods.into_iter().find(|&m| m != "smi") {
            bail!(
                "--device {device} runs smi (the GPU engine is SMI's): run {other} with \
                 --device cpu, or pass --methods smi"
            );
        }
    }
    Ok(device)
}

/// Checks before any work that `method` (by name, for the message) with `settings` can run on
/// `device`: every method on the CPU; on a GPU, SMI with shared gradients in a build with the
/// `cuda` feature.
///
/// # Errors
/// A build without the CUDA backend; a method other than SMI, or per-pair gradient reuse, on a
/// GPU (the message names what runs there).
pub fn check(method: &str, settings: &MethodSettings, device: Device) -> Result<()> {
    if device == Device::Cpu {
        return Ok(());
    }
    device.check_built()?;
    match settings {
        MethodSettings::Stein(s)
            if method == "smi" && s.gradient_reuse == GradientReuse::Shared =>
        {
            Ok(())
        }
        _ => bail!(
            "--device {device} runs smi (with shared gradients): the GPU engine is SMI's; run \
             {method} on the CPU (--device cpu)"
        ),
    }
}

/// The engine of `settings` over `net` on `device`. On a GPU the particles stay on the device
/// between steps where the kernel allows it; `host_update` runs the Stein update on the host
/// instead (the engine as it was before the device update, for comparisons; ignored on the
/// CPU).
///
/// # Errors
/// As [`check`]; the engine constructors' errors; on a GPU no driver or no such device (the
/// CUDA error's own words).
pub fn engine_on<'a>(
    method: &str,
    settings: &MethodSettings,
    net: Net<'a>,
    device: Device,
    host_update: bool,
) -> Result<Box<dyn Engine + 'a>> {
    check(method, settings, device)?;
    match device {
        Device::Cpu => Ok(settings.build(net.density())?),
        #[cfg(feature = "cuda")]
        Device::Cuda(ordinal) => Ok(Box::new(cuda_stein(settings, net, ordinal, host_update)?)),
        // `check` has refused a GPU in a build without the backend
        #[cfg(not(feature = "cuda"))]
        Device::Cuda(_) => {
            let _ = host_update;
            bail!("internal: a CUDA build without the cuda feature")
        }
    }
}

/// The mean time of each phase of `steps` GPU steps of `settings` over `net` on device
/// `ordinal` (a fresh engine from its initial state; `rows(t)` gives step t's shared rows, or
/// `None`), each phase waited for on its own: where a step's time goes. `host_update` as
/// [`engine_on`]. Returns (phase, mean milliseconds) pairs in step order.
///
/// # Errors
/// As [`engine_on`]; a build without the `cuda` feature.
pub fn profile_gpu_steps<'r>(
    settings: &MethodSettings,
    net: Net<'_>,
    ordinal: usize,
    host_update: bool,
    steps: usize,
    rows: &dyn Fn(usize) -> Option<&'r [usize]>,
) -> Result<Vec<(String, f64)>> {
    Device::Cuda(ordinal).check_built()?;
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (settings, net, host_update, steps, rows);
        bail!("internal: a CUDA build without the cuda feature")
    }
    #[cfg(feature = "cuda")]
    {
        let engine = cuda_stein(settings, net, ordinal, host_update)?;
        let mut state = engine.init()?;
        // two steps untimed: buffers, the first upload and cuBLAS's first calls
        for t in 0..2 {
            engine.step(&mut state, rows(t))?;
        }
        engine.set_profiling(true)?;
        for t in 2..2 + steps {
            engine.step(&mut state, rows(t))?;
        }
        let phases = engine.profile()?;
        engine.set_profiling(false)?;
        Ok(phases
            .into_iter()
            .map(|p| (p.name.to_string(), p.ms))
            .collect())
    }
}

/// The CUDA engine of `settings` (SMI's) over `net` on device `ordinal`, with the update on
/// the host when `host_update`.
#[cfg(feature = "cuda")]
fn cuda_stein<'a>(
    settings: &MethodSettings,
    net: Net<'a>,
    ordinal: usize,
    host_update: bool,
) -> Result<smi_models::cuda::CudaSteinVi<'a>> {
    use smi_models::cuda::{CudaError, CudaSteinVi};
    let MethodSettings::Stein(settings) = settings else {
        bail!("the GPU engine runs SMI (Stein settings), not these settings");
    };
    // the CUDA error's own words, without the "model error" of smi::Error::Model
    let plain = |e: smi::Error| match CudaError::of(&e) {
        Some(c) => anyhow::anyhow!("{c}"),
        None => e.into(),
    };
    let settings = settings.clone();
    let engine = match net {
        Net::Regression(m) => CudaSteinVi::regression(m, settings, ordinal),
        Net::Classifier(m) => CudaSteinVi::classifier(m, settings, ordinal),
    }
    .map_err(plain)?;
    Ok(if host_update {
        engine.with_host_update()
    } else {
        engine
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_runs_smi_only_and_says_so() {
        let ovi = smi::Method::Ovi.preset(100);
        let e = check("ovi", &ovi, Device::Cuda(0)).unwrap_err().to_string();
        if Device::CUDA_BUILT {
            assert!(e.contains("runs smi") && e.contains("--device cpu"), "{e}");
        } else {
            assert!(e.contains("--features cuda"), "{e}");
        }
        assert!(check("ovi", &ovi, Device::Cpu).is_ok());
        let smi = smi::Method::Smi.preset(100);
        assert_eq!(
            check("smi", &smi, Device::Cuda(0)).is_ok(),
            Device::CUDA_BUILT
        );
    }
}
