//! The one place the smi crates ask the CPU what it runs.
//!
//! The crates are compiled for baseline x86-64 (SSE2: two f64 lanes), so a plain loop such as
//! θ = μ + σ ⊙ ε runs two values per instruction even on a CPU with AVX-512. Speed code picks a
//! wider build at run time, and every such choice goes through [`level`]: one detection, made
//! once per process and cached. Two ways to use it:
//!
//! - [`multiversion!`] compiles one function body for each [`Level`] and runs the widest the CPU
//!   has. Every build computes the same IEEE operations per element: Rust never fuses a
//!   multiply and an add by itself and the vectoriser does not reorder a floating-point sum, so
//!   the builds give the same bits, which is what lets loops on the results' path use it.
//! - A hand-written kernel (explicit fused multiply-adds, reordered sums, intrinsics) matches on
//!   [`level`] and calls its own `#[target_feature]` builds. Where the builds compute the same
//!   operations (`smi`'s mixture blocks and normals) a test asserts they give the plain build's
//!   bits; where the wide build fuses what the plain one rounds twice (`smi-models`' `exp` and
//!   f32 `tanh`) the results differ by CPU, and a test bounds the error against the exact
//!   function instead.
//!
//! # Admitting a new special case
//! A new kernel or `multiversion!` function is admitted only with a measured share of a named
//! benchmark step (`cargo bench` or `smi bench`, before and after in one run, the CPU named):
//! a loop that does not move a benchmark stays a plain loop.

use std::sync::atomic::{AtomicU8, Ordering};

/// The vector instructions a build may use, from narrowest to widest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    /// Baseline x86-64 (SSE2), or any other architecture.
    Baseline = 1,
    /// AVX2 and FMA (and with them AVX): x86-64-v3.
    Avx2Fma = 2,
    /// AVX-512 F, DQ and VL besides AVX2 and FMA: x86-64-v4 without BW/CD.
    Avx512 = 3,
}

/// The widest [`Level`] this CPU runs, detected on the first call and cached (one relaxed
/// atomic load after that: cheap enough for the dispatch of a short loop).
#[inline]
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Baseline,
        2 => Level::Avx2Fma,
        3 => Level::Avx512,
        _ => {
            let l = detect();
            LEVEL.store(l as u8, Ordering::Relaxed);
            l
        }
    }
}

/// The cached [`level`]: 0 before the first detection, else the level's discriminant.
static LEVEL: AtomicU8 = AtomicU8::new(0);

#[cfg(target_arch = "x86_64")]
fn detect() -> Level {
    let v3 =
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    let v4 = v3
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("avx512vl");
    if v4 {
        Level::Avx512
    } else if v3 {
        Level::Avx2Fma
    } else {
        Level::Baseline
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Level {
    Level::Baseline
}

/// The arms of a kernel unrolled for a few sizes, written once: evaluates `$call` with the
/// constant `$c` set to `$v` when `$v` is one of the listed sizes (literals or constants), and
/// to `$default` otherwise. Each arm is its own build of the kernel (a const generic), the
/// default arm the general one; a test per kernel asserts that every unrolled build gives the
/// general build's bits.
///
/// ```
/// /// Σ x over N lanes at a time (N = 0: one at a time).
/// fn lane_sum<const N: usize>(x: &[f64]) -> f64 {
///     x.chunks(N.max(1)).map(|c| c.iter().sum::<f64>()).sum()
/// }
/// let x = [1.0, 2.0, 3.0, 4.0];
/// for n in [1, 2, 4, 7] {
///     let s = smi_simd::unrolled!(n; [1, 2, 4] else 0 => |N| lane_sum::<N>(&x));
///     assert_eq!(s, 10.0);
/// }
/// ```
#[macro_export]
macro_rules! unrolled {
    ($v:expr; [$($n:tt),+ $(,)?] else $default:tt => |$c:ident| $call:expr) => {
        match $v {
            $($n => {
                const $c: usize = $n;
                $call
            })+
            _ => {
                const $c: usize = $default;
                $call
            }
        }
    };
}

/// Defines a function whose body is compiled for each [`Level`] (AVX-512F with AVX2 and FMA;
/// AVX2 and FMA; the baseline), dispatching at each call on [`level`] (a cached read) to
/// the widest build the CPU runs. Plain `fn` items only: arguments are `name: Type`, type
/// parameters `T: Bound` (one bound each), no `self`, no lifetimes in the signature beyond
/// elided ones. Attributes go on the defined function (e.g. `#[allow(clippy::too_many_arguments)]`).
///
/// ```
/// smi_simd::multiversion! {
///     /// y ← a·x + y.
///     pub fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
///         for (y, &x) in y.iter_mut().zip(x) {
///             *y += a * x;
///         }
///     }
/// }
/// let mut y = vec![1.0; 5];
/// axpy(2.0, &[1.0, 2.0, 3.0, 4.0, 5.0], &mut y);
/// assert_eq!(y, [3.0, 5.0, 7.0, 9.0, 11.0]);
/// ```
#[macro_export]
macro_rules! multiversion {
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident $(<$($g:ident : $bound:path),+>)?
            ($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$attr])*
        $vis fn $name $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            fn body $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                fn wide $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? {
                    body $(::<$($g),+>)? ($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                fn half $(<$($g: $bound),+>)? ($($arg: $ty),*) $(-> $ret)? {
                    body $(::<$($g),+>)? ($($arg),*)
                }
                match $crate::level() {
                    // SAFETY: the CPU has AVX-512F, AVX2 and FMA (`level`'s detection).
                    $crate::Level::Avx512 => return unsafe { wide $(::<$($g),+>)? ($($arg),*) },
                    // SAFETY: the CPU has AVX2 and FMA (`level`'s detection).
                    $crate::Level::Avx2Fma => return unsafe { half $(::<$($g),+>)? ($($arg),*) },
                    $crate::Level::Baseline => {}
                }
            }
            body $(::<$($g),+>)? ($($arg),*)
        }
    };
}

#[cfg(test)]
mod tests {
    /// θ = μ + σ·ε and Σ θ² in eight explicit lanes.
    #[inline(always)]
    fn loop_body(mu: &[f64], sigma: &[f64], eps: &[f64], theta: &mut [f64]) -> f64 {
        let mut acc = [0.0; 8];
        for (i, (((t, &m), &s), &e)) in theta.iter_mut().zip(mu).zip(sigma).zip(eps).enumerate() {
            *t = m + s * e;
            acc[i % 8] += *t * *t;
        }
        acc.iter().sum()
    }

    /// [`loop_body`] in the baseline build only.
    #[inline(never)]
    fn plain(mu: &[f64], sigma: &[f64], eps: &[f64], theta: &mut [f64]) -> f64 {
        loop_body(mu, sigma, eps, theta)
    }

    crate::multiversion! {
        /// [`loop_body`] in the widest build.
        fn draw_and_sum(mu: &[f64], sigma: &[f64], eps: &[f64], theta: &mut [f64]) -> f64 {
            loop_body(mu, sigma, eps, theta)
        }
    }

    crate::multiversion! {
        /// out = x widened, for a generic element type.
        fn widen<T: Into<f64>>(x: Vec<T>, out: &mut [f64]) {
            for (o, v) in out.iter_mut().zip(x) {
                *o = v.into();
            }
        }
    }

    #[test]
    fn every_build_gives_the_plain_loops_bits() {
        let n = 1003; // not a multiple of any vector width
        let f = |i: usize, a: f64| ((i as f64) * a).sin() * 1e3_f64.powf((i % 7) as f64 - 3.0);
        let mu: Vec<f64> = (0..n).map(|i| f(i, 0.37)).collect();
        let sigma: Vec<f64> = (0..n).map(|i| f(i, 1.13).abs()).collect();
        let eps: Vec<f64> = (0..n).map(|i| f(i, 2.71) * 1e-3).collect();
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        let sa = plain(&mu, &sigma, &eps, &mut a);
        let sb = draw_and_sum(&mu, &sigma, &eps, &mut b);
        assert_eq!(sa.to_bits(), sb.to_bits());
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        let x: Vec<f32> = (0..n).map(|i| f(i, 0.5) as f32).collect();
        let mut out = vec![0.0; n];
        widen(x.clone(), &mut out);
        assert!(out.iter().zip(&x).all(|(&o, &v)| o == f64::from(v)));
    }

    #[test]
    fn the_level_is_detected_once_and_stays() {
        assert_eq!(super::level(), super::level());
        #[cfg(target_arch = "x86_64")]
        if super::level() >= super::Level::Avx2Fma {
            assert!(std::arch::is_x86_feature_detected!("fma"));
        }
    }
}
