//! `Gpu`: finding the driver and the device, the stream, the cuBLAS handle and the compiled
//! kernels; every failure is a [`CudaError`] that says what is missing.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig};
use cudarc::nvrtc::{CompileOptions, Ptx};

use super::error::{CallContext, CudaError};
use super::kernels::{BLOCK, KERNEL_NAMES, REDUCE_BLOCK, SOURCE};
use smi::Result;

/// The kernels of `kernels.rs`, by name (the index into [`KERNEL_NAMES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    SampleRows,
    GuideCoeffs,
    SampleTheta,
    MixComponents,
    MixResponsibilities,
    Pullback,
    GatherRows,
    GatherLabels,
    BiasAct,
    ActGrad,
    ColSums,
    GaussHead,
    SoftmaxHead,
    PriorFinish,
    ToF32,
    PairSqPartials,
    SteinDirection,
    OptimizerStep,
    PullbackFinish,
}

/// Whether the NVIDIA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the library by its candidate names (no symbol is called).
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether NVRTC can be loaded on this machine.
pub fn nvrtc_present() -> bool {
    // SAFETY: as in `driver_present`.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles the kernels' source to PTX with NVRTC (no GPU needed, only libnvrtc).
///
/// # Errors
/// [`CudaError::MissingLibrary`] without NVRTC; [`CudaError::Compile`] with NVRTC's log.
pub fn compile_kernels() -> Result<Ptx> {
    if !nvrtc_present() {
        return Err(CudaError::MissingLibrary { library: "nvrtc" }.into());
    }
    let opts = CompileOptions {
        name: Some("smi_models_kernels.cu".into()),
        ..Default::default()
    };
    cudarc::nvrtc::compile_ptx_with_opts(SOURCE, opts).map_err(|e| {
        let text = match &e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                log.to_string_lossy().into_owned()
            }
            other => other.to_string(),
        };
        CudaError::Compile(text).into()
    })
}

/// One GPU: its context and stream, a cuBLAS handle on that stream and the compiled kernels.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    functions: Vec<CudaFunction>,
    name: String,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("ordinal", &self.ctx.ordinal())
            .field("name", &self.name)
            .finish()
    }
}

impl Gpu {
    /// Opens device `ordinal`: checks for the driver, cuBLAS and NVRTC (loaded at run time),
    /// creates the context, the stream and the cuBLAS handle, and compiles the kernels
    /// (about a second, once).
    ///
    /// # Errors
    /// [`CudaError::NoDriver`], [`CudaError::MissingLibrary`], [`CudaError::NoDevice`] (into
    /// [`smi::Error::Model`]); [`CudaError::Compile`] or [`CudaError::Call`] when the driver
    /// refuses.
    pub fn new(ordinal: usize) -> Result<Self> {
        if !driver_present() {
            return Err(CudaError::NoDriver.into());
        }
        // SAFETY: as in `driver_present`.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(CudaError::MissingLibrary { library: "cublas" }.into());
        }
        let count = CudaContext::device_count().ctx("counting the CUDA devices")?;
        let count = usize::try_from(count).unwrap_or(0);
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count }.into());
        }
        let ptx = compile_kernels()?;
        let ctx = CudaContext::new(ordinal).ctx("creating the CUDA context")?;
        // One stream: the launches are ordered by it, no events are needed.
        // SAFETY: nothing of this context runs on another stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let blas = CudaBlas::new(stream.clone()).ctx("creating the cuBLAS handle")?;
        let module = ctx.load_module(ptx).ctx("loading the compiled kernels")?;
        let functions = KERNEL_NAMES
            .iter()
            .map(|n| module.load_function(n).ctx(&format!("loading kernel {n}")))
            .collect::<Result<Vec<_>>>()?;
        let name = ctx.name().ctx("reading the device name")?;
        Ok(Gpu {
            ctx,
            stream,
            blas,
            functions,
            name,
        })
    }

    /// The device's name (e.g. "NVIDIA H100 80GB HBM3").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The stream every call of this GPU runs on.
    /// Page-locked host memory of `len` values for copies to the GPU (write-combined: fast for
    /// the host to write and the GPU to read, slow for the host to read).
    pub(crate) fn pinned_upload<T: cudarc::driver::DeviceRepr>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<cudarc::driver::PinnedHostSlice<T>> {
        // SAFETY: the values are unset until written; callers write every value before a copy.
        unsafe { self.ctx.alloc_pinned::<T>(len.max(1)) }
            .ctx(&format!("allocating page-locked host memory for {what}"))
    }

    /// Page-locked host memory of `len` values for copies from the GPU (plain page-locked:
    /// the host reads it at memory speed).
    pub(crate) fn pinned_download<T: cudarc::driver::DeviceRepr>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<cudarc::driver::PinnedHostSlice<T>> {
        // SAFETY: the values are unset until a copy from the GPU fills them; callers read only
        // after such a copy.
        unsafe { self.ctx.alloc_pinned_with_flags::<T>(len.max(1), 0) }
            .ctx(&format!("allocating page-locked host memory for {what}"))
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The cuBLAS handle (on [`Gpu::stream`]).
    pub(crate) fn blas(&self) -> &CudaBlas {
        &self.blas
    }

    /// A launch of kernel `k`; add its arguments, then `launch` it.
    pub(crate) fn launch(&self, k: Kernel) -> cudarc::driver::LaunchArgs<'_> {
        self.stream.launch_builder(&self.functions[k as usize])
    }

    /// Waits for the stream's work to finish.
    ///
    /// # Errors
    /// [`CudaError::Call`] with the first failure of the queued work.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().ctx("waiting for the GPU")
    }
}

/// One thread per element of a grid over `n` elements, blocks of [`BLOCK`].
///
/// # Errors
/// [`CudaError::Unsupported`] when `n` needs more than 2³¹ − 1 blocks.
pub(crate) fn grid(n: usize) -> Result<LaunchConfig> {
    let blocks = u32::try_from(n.div_ceil(BLOCK as usize).max(1))
        .map_err(|_| CudaError::Unsupported(format!("{n} elements in one kernel launch")))?;
    Ok(LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// One block of [`REDUCE_BLOCK`] threads per (x, y) for the block reductions, with the shared
/// memory their `block_sum` needs (one `double` per thread).
///
/// # Errors
/// [`CudaError::Unsupported`] when x needs more than 2³¹ − 1 blocks or y more than 65 535.
pub(crate) fn reduce_grid(x: usize, y: usize) -> Result<LaunchConfig> {
    let too_many =
        |what: &str, n: usize| CudaError::Unsupported(format!("{n} {what} in one launch"));
    let gx = u32::try_from(x.max(1)).map_err(|_| too_many("blocks", x))?;
    let gy = u32::try_from(y.max(1))
        .ok()
        .filter(|&v| v <= 65_535)
        .ok_or_else(|| too_many("block rows", y))?;
    Ok(LaunchConfig {
        grid_dim: (gx, gy, 1),
        block_dim: (REDUCE_BLOCK, 1, 1),
        shared_mem_bytes: REDUCE_BLOCK * 8,
    })
}

/// A device `int` from a size.
///
/// # Errors
/// [`CudaError::Unsupported`] for a size beyond `i32::MAX` (what cuBLAS and the kernels index).
pub(crate) fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v)
        .map_err(|_| CudaError::Unsupported(format!("{what} = {v} exceeds 2³¹ − 1")).into())
}
