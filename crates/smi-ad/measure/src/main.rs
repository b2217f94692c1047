//! Cost per gradient of eight schools (non-centred, θ = (θ̃_1..θ̃_J, μ, log τ), d = J + 2)
//! through candidate automatic-differentiation crates, against the hand-written gradient.
//!
//! Each candidate evaluates the same log density; the time is this thread's CPU time (the
//! machine is shared, so wall time would count other processes), per gradient, the minimum
//! over interleaved rounds (every candidate once per round). The last column is the largest
//! relative difference of log p and ∇ log p from the hand-written values (relative to
//! max(|hand|, 1e-3)).

use std::hint::black_box;
use std::sync::OnceLock;

use ad_trait::forward_ad::adfn::adfn;
use ad_trait::reverse_ad::adr::{adr, GlobalComputationGraph};
use ad_trait::AD;
use easy_ml::differentiation::{Record, WengertList};
use easy_ml::numeric::extra::{Exp, Ln};
use nalgebra::{Const, Dyn, U1};
use num_dual::{Derivative, DualDVec64, DualNum, DualSVec64};

/// (y, σ) of the J schools.
static DATA: OnceLock<(Vec<f64>, Vec<f64>)> = OnceLock::new();

fn data() -> (&'static [f64], &'static [f64]) {
    let (y, s) = DATA.get().expect("data set in main");
    (y, s)
}

/// The reference: log p and its gradient derived by hand.
fn hand(th: &[f64], g: &mut [f64]) -> f64 {
    let (y, s) = data();
    let j = y.len();
    let (mu, u) = (th[j], th[j + 1]);
    let tau = u.exp();
    let t2 = (tau / 5.0).powi(2);
    let mut lp = -0.5 * (mu / 5.0).powi(2) - t2.ln_1p() + u;
    let (mut g_mu, mut g_u) = (-mu / 25.0, 1.0 - 2.0 * t2 / (1.0 + t2));
    for i in 0..j {
        let z = th[i];
        let r = (y[i] - mu - tau * z) / s[i];
        lp += -0.5 * z * z - 0.5 * r * r;
        g[i] = -z + r * tau / s[i];
        g_mu += r / s[i];
        g_u += r * z * tau / s[i];
    }
    g[j] = g_mu;
    g[j + 1] = g_u;
    lp
}

/// The log density once, for every num-dual type (and f64).
fn log_p<T: DualNum<Primitive = f64> + Copy>(th: &[T]) -> T {
    let (y, s) = data();
    let j = y.len();
    let (mu, u) = (th[j], th[j + 1]);
    let tau = u.exp();
    let mut lp = (mu / 5.0).powi(2) * -0.5 - (tau / 5.0).powi(2).ln_1p() + u;
    for i in 0..j {
        let z = th[i];
        let r = (-(mu + tau * z) + y[i]) / s[i];
        lp += z * z * -0.5 - r * r * 0.5;
    }
    lp
}

/// The same with heap-allocated dynamic duals (not `Copy`).
fn log_p_dyn(th: &[DualDVec64]) -> DualDVec64 {
    let (y, s) = data();
    let j = y.len();
    let (mu, u) = (th[j].clone(), th[j + 1].clone());
    let tau = u.exp();
    let mut lp = (mu.clone() / 5.0).powi(2) * -0.5 - (tau.clone() / 5.0).powi(2).ln_1p() + u;
    for i in 0..j {
        let z = th[i].clone();
        let r = (-(mu.clone() + tau.clone() * z.clone()) + y[i]) / s[i];
        lp += z.clone() * z * -0.5 - r.clone() * r * 0.5;
    }
    lp
}

/// num-dual, all d = 10 derivatives in one pass (only for J = 8).
fn num_dual_one_pass(th: &[f64], g: &mut [f64]) -> f64 {
    let x: Vec<DualSVec64<10>> = th
        .iter()
        .enumerate()
        .map(|(i, &v)| DualSVec64::from_re(v).derivative(i))
        .collect();
    let r = log_p(&x);
    g.copy_from_slice(r.eps.unwrap_generic(Const::<10>, U1).as_slice());
    r.re
}

/// num-dual, C derivatives per pass, ⌈d/C⌉ passes (what smi-ad does, with C = 3).
fn num_dual_chunks<const C: usize>(th: &[f64], g: &mut [f64]) -> f64 {
    let d = th.len();
    let mut x: Vec<DualSVec64<C>> = th.iter().map(|&v| DualSVec64::from_re(v)).collect();
    let mut lp = 0.0;
    for c0 in (0..d).step_by(C) {
        for (i, xi) in x.iter_mut().enumerate() {
            xi.eps = if (c0..c0 + C).contains(&i) {
                Derivative::derivative_generic(Const::<C>, U1, i - c0)
            } else {
                Derivative::none()
            };
        }
        let r = log_p(&x);
        lp = r.re;
        let e = r.eps.unwrap_generic(Const::<C>, U1);
        for k in 0..C.min(d - c0) {
            g[c0 + k] = e[k];
        }
    }
    lp
}

/// num-dual, heap-allocated dynamic duals, one pass.
fn num_dual_dynamic(th: &[f64], g: &mut [f64]) -> f64 {
    let d = th.len();
    let x: Vec<DualDVec64> = th
        .iter()
        .enumerate()
        .map(|(i, &v)| DualDVec64::from_re(v).derivative(d, i))
        .collect();
    let r = log_p_dyn(&x);
    g.copy_from_slice(r.eps.unwrap_generic(Dyn(d), U1).as_slice());
    r.re
}

/// The log density for ad_trait's types (constants through `T::constant`).
fn log_p_ad_trait<T: AD>(th: &[T]) -> T {
    let c = T::constant;
    let (y, s) = data();
    let j = y.len();
    let (mu, u) = (th[j], th[j + 1]);
    let tau = u.exp();
    let mut lp = (mu / c(5.0)).powi(2) * c(-0.5) - (tau / c(5.0)).powi(2).ln_1p() + u;
    for i in 0..j {
        let z = th[i];
        let r = (c(y[i]) - mu - tau * z) / c(s[i]);
        lp += z * z * c(-0.5) - r * r * c(0.5);
    }
    lp
}

/// ad_trait reverse mode (thread-local global tape).
fn ad_trait_reverse(th: &[f64], g: &mut [f64]) -> f64 {
    GlobalComputationGraph::get().reset();
    let x: Vec<adr> = th.iter().map(|&v| adr::new_variable(v, false)).collect();
    let r = log_p_ad_trait(&x);
    let grads = r.get_backwards_mode_grad();
    for (gi, xi) in g.iter_mut().zip(&x) {
        *gi = grads.wrt(xi);
    }
    r.value()
}

/// ad_trait forward mode, all d = 10 tangents in one pass (only for J = 8).
fn ad_trait_forward(th: &[f64], g: &mut [f64]) -> f64 {
    let x: Vec<adfn<10>> = th
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let mut t = [0.0; 10];
            t[i] = 1.0;
            adfn::new(v, t)
        })
        .collect();
    let r = log_p_ad_trait(&x);
    g.copy_from_slice(&r.tangent());
    r.value()
}

/// The log density for easy-ml's reverse-mode records.
fn log_p_easy_ml<'a>(th: &[Record<'a, f64>]) -> Record<'a, f64> {
    let (y, s) = data();
    let j = y.len();
    let (mu, u) = (th[j], th[j + 1]);
    let tau = u.exp();
    let (m5, t5) = (mu / 5.0, tau / 5.0);
    let mut lp = m5 * m5 * -0.5 - (t5 * t5 + 1.0).ln() + u;
    for i in 0..j {
        let z = th[i];
        let r = (-(mu + tau * z) + y[i]) / s[i];
        lp = lp + z * z * -0.5 - r * r * 0.5;
    }
    lp
}

thread_local! {
    /// easy-ml's tape, cleared before every gradient.
    static TAPE: &'static WengertList<f64> = Box::leak(Box::new(WengertList::new()));
}

/// easy-ml reverse mode (Wengert list).
fn easy_ml_reverse(th: &[f64], g: &mut [f64]) -> f64 {
    TAPE.with(|tape| {
        tape.clear();
        let x: Vec<Record<f64>> = th.iter().map(|&v| Record::variable(v, tape)).collect();
        let r = log_p_easy_ml(&x);
        let d = r.derivatives();
        for (gi, xi) in g.iter_mut().zip(&x) {
            *gi = d[xi];
        }
        r.number
    })
}

/// CPU time of this thread in ns.
fn cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a valid, exclusively borrowed struct.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

type Grad = fn(&[f64], &mut [f64]) -> f64;

/// ns per gradient over `n` gradients at the 16 points in turn.
fn block(f: Grad, pts: &[Vec<f64>], n: usize, g: &mut [f64]) -> f64 {
    let d = g.len();
    let t = cpu_ns();
    let mut acc = 0.0;
    for i in 0..n {
        acc += f(black_box(&pts[i % pts.len()]), g);
        acc += g[i % d];
    }
    black_box(acc);
    (cpu_ns() - t) / n as f64
}

/// Prints the table: the best block of every candidate over `rounds` interleaved rounds.
fn table(cands: &[(&str, Grad)], pts: &[Vec<f64>], rounds: usize) {
    let d = pts[0].len();
    let n = 200_000 / d;
    let mut g = vec![0.0; d];
    let mut best = vec![f64::INFINITY; cands.len()];
    for _ in 0..rounds {
        for (b, (_, f)) in best.iter_mut().zip(cands) {
            *b = b.min(block(*f, pts, n, &mut g));
        }
    }
    let mut gh = vec![0.0; d];
    println!("| candidate | ns/gradient | × hand-written | max rel. diff |");
    println!("|---|---|---|---|");
    for ((name, f), b) in cands.iter().zip(&best) {
        let mut worst: f64 = 0.0;
        for p in pts {
            let (l, lh) = (f(p, &mut g), hand(p, &mut gh));
            worst = worst.max((l - lh).abs() / lh.abs().max(1e-3));
            for (a, h) in g.iter().zip(&gh) {
                worst = worst.max((a - h).abs() / h.abs().max(1e-3));
            }
        }
        println!("| {name} | {b:.0} | {:.1} | {worst:.0e} |", b / best[0]);
    }
}

fn main() {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpu.lines().find(|l| l.starts_with("model name"));
    println!("{}", cpu.unwrap_or("model name: unknown"));
    let mut args = std::env::args().skip(1);
    let j: usize = args.next().map_or(8, |s| s.parse().expect("J"));
    let rounds: usize = args.next().map_or(20, |s| s.parse().expect("rounds"));
    let sweep = args.next().as_deref() == Some("sweep");
    let (y, s) = if j == 8 {
        (
            vec![28., 8., -3., 7., -1., 1., 18., 12.],
            vec![15., 10., 16., 11., 9., 11., 10., 18.],
        )
    } else {
        let y = (0..j).map(|i| 10.0 * (i as f64).sin()).collect();
        (y, (0..j).map(|i| 10.0 + 5.0 * (i as f64).cos()).collect())
    };
    DATA.set((y, s)).expect("set once");
    let d = j + 2;
    // 16 points in a box around the posterior bulk (μ in ±5, the rest in ±1).
    let pts: Vec<Vec<f64>> = (0..16)
        .map(|k| {
            (0..d)
                .map(|i| ((k * d + i) as f64 * 0.37).sin() * if i == j { 5.0 } else { 1.0 })
                .collect()
        })
        .collect();
    println!("J = {j} schools, d = {d}, best of {rounds} interleaved rounds\n");
    let mut c: Vec<(&str, Grad)> = vec![("hand-written", hand)];
    if sweep {
        c.extend([
            ("num-dual, chunks of 1", num_dual_chunks::<1> as Grad),
            ("num-dual, chunks of 2", num_dual_chunks::<2>),
            ("num-dual, chunks of 3", num_dual_chunks::<3>),
            ("num-dual, chunks of 4", num_dual_chunks::<4>),
            ("num-dual, chunks of 5", num_dual_chunks::<5>),
            ("num-dual, chunks of 6", num_dual_chunks::<6>),
            ("num-dual, chunks of 8", num_dual_chunks::<8>),
            ("num-dual, chunks of 10", num_dual_chunks::<10>),
            ("num-dual, chunks of 16", num_dual_chunks::<16>),
        ]);
        return table(&c, &pts, rounds);
    }
    c.push(("num-dual, chunks of 3 (smi-ad)", num_dual_chunks::<3>));
    if j == 8 {
        c.push(("num-dual DualSVec64<10>, one pass", num_dual_one_pass));
        c.push(("ad_trait adfn<10> forward, one pass", ad_trait_forward));
    }
    c.extend([
        (
            "num-dual DualDVec64 (heap), one pass",
            num_dual_dynamic as Grad,
        ),
        ("ad_trait adr reverse", ad_trait_reverse),
        ("easy-ml Record reverse", easy_ml_reverse),
    ]);
    table(&c, &pts, rounds);
}
