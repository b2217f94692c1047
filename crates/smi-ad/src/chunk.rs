//! The gradient of one draw by forward mode in chunks (ForwardDiff.jl's "chunk mode"): the
//! function is evaluated on `num-dual` vector duals that carry C partial derivatives on the
//! stack, seeded with C coordinates of θ at a time, so ⌈d/C⌉ evaluations give the gradient
//! without any allocation per operation.

use num_dual::{Derivative, DualSVec64};
use smi::Result;

/// Partial derivatives carried per evaluation. Measured on eight schools (d = 10) and on the
/// same model with 30 and 100 schools (README's table): chunks of 2–10 cost within 1.5× of
/// each other, 3 was the fastest or within noise of it at every d, and widths that are
/// multiples of 4 were up to 3× slower (measured; the cause was not investigated).
pub(crate) const CHUNK: usize = 3;

/// Reusable buffer of dual numbers for [`value_and_gradient`].
pub(crate) type Duals<const C: usize> = Vec<DualSVec64<C>>;

/// Writes ∇f(θ) into `grad` (length d = `theta.len()`) and returns f(θ), evaluating `f` on
/// duals of width C ⌈d/C⌉ times; `buf` is scratch space reused across calls.
///
/// # Errors
/// The first error of `f`.
pub(crate) fn value_and_gradient<const C: usize, F>(
    theta: &[f64],
    grad: &mut [f64],
    buf: &mut Duals<C>,
    f: F,
) -> Result<f64>
where
    F: Fn(&[DualSVec64<C>]) -> Result<DualSVec64<C>>,
{
    let d = theta.len();
    buf.clear();
    buf.extend(theta.iter().map(|&v| DualSVec64::from_re(v)));
    let mut value = 0.0;
    for start in (0..d).step_by(C) {
        let end = (start + C).min(d);
        if start >= C {
            // The previous chunk's seeds become constants again.
            for x in &mut buf[start - C..start] {
                x.eps = Derivative::none();
            }
        }
        for (k, x) in buf[start..end].iter_mut().enumerate() {
            *x = x.derivative(k);
        }
        let out = f(buf)?;
        value = out.re;
        match &out.eps.0 {
            Some(eps) => grad[start..end].copy_from_slice(&eps.as_slice()[..end - start]),
            // A result that depends on none of the seeded coordinates.
            None => grad[start..end].fill(0.0),
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_coordinate() {
        // f(θ) = Σ (i+1)·θ_i², so ∂f/∂θ_i = 2(i+1)θ_i exactly, for d not a multiple of C.
        let theta: Vec<f64> = (0..11).map(|i| 0.5 + i as f64).collect();
        let mut grad = vec![f64::NAN; 11];
        let mut buf = Duals::<CHUNK>::new();
        let f = |x: &[DualSVec64<CHUNK>]| {
            Ok(x.iter()
                .enumerate()
                .map(|(i, v)| *v * *v * (i + 1) as f64)
                .sum::<DualSVec64<CHUNK>>())
        };
        let value = value_and_gradient(&theta, &mut grad, &mut buf, f).unwrap();
        let want: f64 = theta
            .iter()
            .enumerate()
            .map(|(i, t)| (i + 1) as f64 * t * t)
            .sum();
        assert_eq!(value, want);
        for (i, (g, t)) in grad.iter().zip(&theta).enumerate() {
            assert_eq!(*g, 2.0 * (i + 1) as f64 * t, "coordinate {i}");
        }
    }
}
