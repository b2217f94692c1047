//! Element-wise loops built for the widest vector instructions the CPU has.
//!
//! The crate is compiled for baseline x86-64 (SSE2: two f64 lanes), so a plain loop such as
//! θ = μ + σ ⊙ ε runs two values per instruction even on a CPU with AVX-512. [`multiversion!`](crate::multiversion)
//! compiles one function body three times (AVX-512F; AVX2 + FMA; baseline) and picks the widest
//! build the CPU runs at each call (the check is a cached flag read). Every build computes the
//! same IEEE operations per element: Rust never fuses a multiply and an add by itself and the
//! vectoriser does not reorder a floating-point sum, so the three builds give the same bits —
//! which is what lets loops on the results' path use it. A loop whose speed comes from explicit
//! fused multiply-adds or reordered sums needs its own kernel instead (`guide/mixture/blocked.rs`,
//! `random/normal.rs`).

/// Defines a function whose body is compiled for AVX-512F, for AVX2 + FMA and for the baseline,
/// dispatching at each call to the widest build the CPU runs (see [`crate::simd`]). Plain
/// `fn` items only: arguments are `name: Type`, type parameters `T: Bound` (one bound each), no
/// `self`, no lifetimes in the signature beyond elided ones. Attributes go on the defined
/// function (e.g. `#[allow(clippy::too_many_arguments)]`).
///
/// ```
/// smi::multiversion! {
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
                if ::std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F (and with it AVX2 and FMA), checked just above.
                    return unsafe { wide $(::<$($g),+>)? ($($arg),*) };
                }
                if ::std::arch::is_x86_feature_detected!("avx2")
                    && ::std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU has AVX2 and FMA, checked just above.
                    return unsafe { half $(::<$($g),+>)? ($($arg),*) };
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
}
