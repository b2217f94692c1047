//! `CudaError`: what can go wrong on the device path, with messages that say what to do.

/// An error of the CUDA backend. Converts into [`smi::Error::Model`] (engines and models return
/// [`smi::Result`]); match on it through [`CudaError::of`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The NVIDIA driver library (libcuda) is not installed or not on the loader's path.
    #[error(
        "no NVIDIA driver found (libcuda could not be loaded): install the NVIDIA driver or \
         add its folder to LD_LIBRARY_PATH, or run on the CPU (--device cpu)"
    )]
    NoDriver,
    /// A CUDA library the backend needs (cuBLAS or NVRTC) could not be loaded.
    #[error(
        "the CUDA library {library} could not be loaded: install the CUDA toolkit's runtime \
         libraries (or add their folder to LD_LIBRARY_PATH), or run on the CPU (--device cpu)"
    )]
    MissingLibrary {
        /// The library's short name (`"cublas"`, `"nvrtc"`).
        library: &'static str,
    },
    /// The driver is there but the requested GPU is not.
    #[error(
        "no CUDA device {ordinal}: the driver reports {count} device(s){}",
        if *count == 0 { "; run on the CPU (--device cpu)" } else { "" }
    )]
    NoDevice {
        /// The requested device ordinal.
        ordinal: usize,
        /// How many devices the driver sees.
        count: usize,
    },
    /// NVRTC rejected the kernels' source (a bug of this crate: the log says where).
    #[error("NVRTC could not compile the CUDA kernels: {0}")]
    Compile(String),
    /// A driver or cuBLAS call failed (out of memory, a launch failure, …).
    #[error("CUDA error in {context}: {message}")]
    Call {
        /// What was being done.
        context: String,
        /// The driver's or cuBLAS's message.
        message: String,
    },
    /// The model or settings have no device path (e.g. a Delta guide, per-pair gradients).
    #[error("not supported on the GPU: {0}")]
    Unsupported(String),
}

impl CudaError {
    /// The [`CudaError`] inside an [`smi::Error`], if it is one.
    pub fn of(e: &smi::Error) -> Option<&CudaError> {
        match e {
            smi::Error::Model(inner) => inner.downcast_ref::<CudaError>(),
            _ => None,
        }
    }

    /// A [`CudaError::Call`] from a failed call's error.
    pub(crate) fn call(context: impl Into<String>, e: impl std::fmt::Display) -> Self {
        CudaError::Call {
            context: context.into(),
            message: e.to_string(),
        }
    }
}

impl From<CudaError> for smi::Error {
    fn from(e: CudaError) -> Self {
        smi::Error::Model(Box::new(e))
    }
}

/// Adds context to the errors of driver and cuBLAS calls.
pub(crate) trait CallContext<T> {
    /// Maps the error to [`CudaError::Call`] with `context`, then to [`smi::Error`].
    fn ctx(self, context: &str) -> smi::Result<T>;
}

impl<T, E: std::fmt::Display> CallContext<T> for std::result::Result<T, E> {
    fn ctx(self, context: &str) -> smi::Result<T> {
        self.map_err(|e| CudaError::call(context, e).into())
    }
}
