//! Counter-based random numbers: Philox4x32-10 and the standard normals the Normal guide's
//! noise ε is made of, shared with the GPU backend (`smi-models`, feature `cuda`).
//!
//! A counter-based generator makes value i of stream k from (key, i, k) alone, so any row of
//! the noise, or any part of one, costs the same to draw anywhere: a fused step draws each
//! block's rows where it uses them, on any thread, and a GPU draws its own without copying
//! them (docs/algorithms.md §2.2).

mod math;
mod normal;
mod philox;

pub use normal::{fill_normal_rows, fill_normal_rows_f32, fill_normals, fill_normals_f32};
pub use philox::philox4x32;
