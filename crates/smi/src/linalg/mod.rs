//! Dense products on row-major slices through `faer`, called sequentially (no nested
//! parallelism: callers parallelise over draws or particles with rayon).

mod thin;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

pub use thin::Real;

/// Whether an operand is used as stored or transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Use as stored.
    N,
    /// Use transposed.
    T,
}

/// C ← alpha·op(A)·op(B) + (accumulate ? C : 0), all row-major.
///
/// Shapes: op(A) is `m×k`, op(B) is `k×n`, C is `m×n`. A is stored `m×k` (`Op::N`) or `k×m`
/// (`Op::T`), likewise B. Works for `f64` and `f32`.
///
/// Products with a dimension of 1 (outer products, matrix–vector products, column sums: the
/// one-hidden-layer networks make mostly these) run in plain vectorised loops, where faer's
/// per-call set-up (≈ 0.5–0.9 µs) would cost more than the arithmetic; the rest go to faer.
///
/// Panics if a slice is shorter than its shape says (an internal invariant; public entry points
/// check shapes before calling).
#[allow(clippy::too_many_arguments)]
pub fn gemm<T: faer::traits::ComplexField + Real>(
    c: &mut [T],
    a: &[T],
    op_a: Op,
    b: &[T],
    op_b: Op,
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    accumulate: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    if m == 1 || k == 1 || n == 1 {
        thin::gemm(c, a, op_a, b, op_b, m, k, n, alpha, accumulate);
        return;
    }
    let a_ref = match op_a {
        Op::N => MatRef::from_row_major_slice(&a[..m * k], m, k),
        Op::T => MatRef::from_row_major_slice(&a[..m * k], k, m).transpose(),
    };
    let b_ref = match op_b {
        Op::N => MatRef::from_row_major_slice(&b[..k * n], k, n),
        Op::T => MatRef::from_row_major_slice(&b[..k * n], n, k).transpose(),
    };
    let c_mut = MatMut::from_row_major_slice_mut(&mut c[..m * n], m, n);
    let acc = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    matmul(c_mut, acc, a_ref, b_ref, alpha, Par::Seq);
    clear_upper_vector_state();
}

/// Executes `vzeroupper` where the CPU has AVX. faer's kernels leave the upper halves of the
/// vector registers dirty; on Intel CPUs with AVX-512 every later legacy-SSE instruction (a
/// scalar `exp`, say) then pays a transition penalty until the next `vzeroupper`: measured
/// 134 ns instead of 5–8 ns per `exp` after a small product. Code compiled by rustc clears the
/// state itself on leaving AVX functions; faer's hand-written kernels do not, so every faer
/// call here is followed by this.
#[inline]
fn clear_upper_vector_state() {
    #[cfg(target_arch = "x86_64")]
    if smi_simd::level() >= smi_simd::Level::Avx2Fma {
        // SAFETY: the CPU supports AVX2 (so AVX), checked just above. faer's wide kernels need
        // AVX2 and FMA too (pulp's x86-64-v3), so no CPU with AVX but not AVX2 gets here dirty.
        unsafe { vzeroupper() }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn vzeroupper() {
    std::arch::x86_64::_mm256_zeroupper();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                for l in 0..k {
                    c[i * n + j] += a[i * k + l] * b[l * n + j];
                }
            }
        }
        c
    }

    fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
        let mut t = vec![0.0; r * c];
        for i in 0..r {
            for j in 0..c {
                t[j * r + i] = a[i * c + j];
            }
        }
        t
    }

    #[test]
    fn all_transpose_combinations_match_naive() {
        // (3, 4, 5) goes to faer; the others take the thin path (a dimension of 1), including
        // k = 0, lengths that are not multiples of the dot product's 16 partial sums and rows
        // of 59 = 32 + 16 + 8 + 3 columns (every block width of the row sums).
        for (m, k, n) in [
            (3, 4, 5),
            (1, 1, 1),
            (1, 37, 1),
            (40, 1, 100),
            (40, 100, 1),
            (1, 40, 100),
            (1, 40, 59),
            (100, 40, 1),
            (59, 40, 1),
            (1, 3, 7),
            (6, 1, 1),
            (1, 1, 6),
            (4, 0, 3),
            (1, 0, 1),
        ] {
            check_against_naive(m, k, n);
        }
    }

    #[test]
    fn row_sums_give_the_bits_of_the_sequential_sum_at_every_width() {
        // c = Σ_l a_l·(row l of B), the thin path's row sums (m = 1, and its transpose n = 1
        // with A stored k×m): each column summed over the rows in order, as `naive` does, at
        // every width to 90 (the one-sweep widths 16 … 64, with and without a last partial
        // block, and the blocked ones around them), in f32 and f64, bit for bit
        let k = 37;
        for n in 1..=90 {
            let a: Vec<f64> = (0..k).map(|v| (v as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..k * n).map(|v| (v as f64 * 0.11).cos()).collect();
            let want = naive(&a, &b, 1, k, n);
            let mut c = vec![f64::NAN; n];
            gemm(&mut c, &a, Op::N, &b, Op::N, 1, k, n, 1.0, false);
            assert_eq!(c, want, "n = {n}");
            let mut c = vec![0.5; n];
            gemm(&mut c, &b, Op::T, &a, Op::N, n, k, 1, 1.0, true);
            let plus: Vec<f64> = want.iter().map(|v| 0.5 + v).collect();
            assert_eq!(c, plus, "n = {n}, transposed, accumulated");
            let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
            let mut want32 = vec![0.0f32; n];
            for (l, &al) in a32.iter().enumerate() {
                for j in 0..n {
                    want32[j] += al * b32[l * n + j];
                }
            }
            let mut c32 = vec![f32::NAN; n];
            gemm(&mut c32, &a32, Op::N, &b32, Op::N, 1, k, n, 1.0, false);
            assert_eq!(c32, want32, "n = {n}, f32");
        }
    }

    #[test]
    fn thin_path_in_f32_matches_f64() {
        let (m, k, n) = (1, 53, 9);
        let a: Vec<f32> = (0..m * k).map(|v| (v as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|v| (v as f32 * 0.11).cos()).collect();
        let a64: Vec<f64> = a.iter().map(|&v| f64::from(v)).collect();
        let b64: Vec<f64> = b.iter().map(|&v| f64::from(v)).collect();
        let want = naive(&a64, &b64, m, k, n);
        let mut c = vec![0.0f32; m * n];
        gemm(&mut c, &a, Op::N, &b, Op::N, m, k, n, 1.0, false);
        for (x, y) in c.iter().zip(&want) {
            // 53 f32 products of magnitude ≤ 1: rounding ≤ 53 · 2⁻²⁴ ≈ 3e-6
            assert!((f64::from(*x) - y).abs() < 1e-5, "{x} vs {y}");
        }
    }

    fn check_against_naive(m: usize, k: usize, n: usize) {
        let a: Vec<f64> = (0..m * k).map(|v| (v as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..k * n).map(|v| (v as f64 * 0.11).cos()).collect();
        let want = naive(&a, &b, m, k, n);
        let at = transpose(&a, m, k);
        let bt = transpose(&b, k, n);
        for (aa, oa) in [(&a, Op::N), (&at, Op::T)] {
            for (bb, ob) in [(&b, Op::N), (&bt, Op::T)] {
                let mut c = vec![1.0; m * n];
                gemm(&mut c, aa, oa, bb, ob, m, k, n, 1.0, false);
                for (x, y) in c.iter().zip(&want) {
                    assert!((x - y).abs() < 1e-12, "m={m} k={k} n={n} {oa:?} {ob:?}");
                }
                let mut c2 = vec![1.0; m * n];
                gemm(&mut c2, aa, oa, bb, ob, m, k, n, 2.0, true);
                for (x, y) in c2.iter().zip(&want) {
                    assert!(
                        (x - (1.0 + 2.0 * y)).abs() < 1e-12,
                        "m={m} k={k} n={n} {oa:?} {ob:?}"
                    );
                }
            }
        }
    }
}
