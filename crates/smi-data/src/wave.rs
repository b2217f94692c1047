//! The 1-D wave regression data of the in-between-uncertainty experiment (docs/algorithms.md §7.2).
//!
//! `f(x) = 1.5·sin(2πx + φ) + 3x + 1` with the code's phase `φ = 2π/3` (i.e. `sin(2π(x + 1/3))`,
//! [`WavePhase::Code`], the default) or the paper's printed `sin(2π(x + 2/3))`
//! ([`WavePhase::Paper`]); `y = f(x) + 0.1·ε`, ε standard normal.
//!
//! With the default [`WaveSettings`] every set is **bit-identical in x** to the paper's script
//! (`src/sine_wave_data.py` of `smi_experiments`), because the draws use numpy's legacy
//! `RandomState` ([`LegacyRandomState`]), reseeded to 52 before every draw routine:
//!
//! * **train**: seed 52; 20 × `uniform(−1.5, −0.5)` then 20 × `uniform(1.3, 1.7)` from the same
//!   stream; concatenated and sorted ascending.
//! * **in**: seed 52; 20 times: `binomial(2, 0.5)`; if it is non-zero (probability 3/4) one
//!   `uniform(−1.5, −0.5)`, else one `uniform(1.3, 1.7)` (the binomial and uniform draws
//!   interleave on one stream); sorted.
//! * **between**: seed 52; 60 × `uniform(−0.5, 1.3)`; sorted.
//! * **entire**: seed 52; 120 × `uniform(−2, 2)`; sorted.
//! * **grid**: 500 points of `linspace(−2, 2)` (numpy's formula `start + i·step`, last = stop).
//! * **noise** of every set: seed 52 again, then `randn(n)` (legacy polar Gaussian), added in
//!   x-sorted order, so every set's noise vector starts with the same standard normals.
//!
//! The paper's script also defines an imbalanced training set (10 + 100 points), available via
//! [`clusters`].
//!
//! Differences from the paper's arrays: y agrees to within a few ulp rather than bit-exactly
//! (numpy may use a SIMD `sin`), and the paper hands the arrays to JAX, which (without x64)
//! rounds them to `f32`; here they stay `f64`.

use crate::error::{Error, Result};
use crate::legacy_rng::LegacyRandomState;

/// The sine's phase.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum WavePhase {
    /// The code's `sin(2πx + 2π/3) = sin(2π(x + 1/3))` (default; produced the paper's numbers).
    #[default]
    Code,
    /// The paper's printed `sin(2π(x + 2/3))`.
    Paper,
}

/// The wave's parameters and set sizes; `Default` is the paper's code.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct WaveSettings {
    /// Phase convention (default [`WavePhase::Code`]).
    pub phase: WavePhase,
    /// Noise standard deviation (default 0.1).
    pub noise_std: f64,
    /// Seed of numpy's legacy `RandomState`, reset before every draw routine (default 52).
    pub seed: u32,
    /// Left training cluster interval (default (−1.5, −0.5)).
    pub left: (f64, f64),
    /// Right training cluster interval (default (1.3, 1.7)).
    pub right: (f64, f64),
    /// Training points in the left cluster (default 20).
    pub n_train_left: usize,
    /// Training points in the right cluster (default 20).
    pub n_train_right: usize,
    /// Points of the "in" evaluation set (default 20).
    pub n_in: usize,
    /// "Between" interval (default (−0.5, 1.3)).
    pub between: (f64, f64),
    /// Points of the "between" set (default 60).
    pub n_between: usize,
    /// "Entire" interval, also the grid's range (default (−2, 2)).
    pub entire: (f64, f64),
    /// Points of the "entire" set (default 120).
    pub n_entire: usize,
    /// Points of the visualisation grid (default 500).
    pub n_grid: usize,
}

impl Default for WaveSettings {
    fn default() -> Self {
        WaveSettings {
            phase: WavePhase::Code,
            noise_std: 0.1,
            seed: 52,
            left: (-1.5, -0.5),
            right: (1.3, 1.7),
            n_train_left: 20,
            n_train_right: 20,
            n_in: 20,
            between: (-0.5, 1.3),
            n_between: 60,
            entire: (-2.0, 2.0),
            n_entire: 120,
            n_grid: 500,
        }
    }
}

impl WaveSettings {
    /// Checks that every interval is finite with `lo ≤ hi` and that the noise is finite and
    /// non-negative.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the offending field.
    pub fn validate(&self) -> Result<()> {
        for (name, (lo, hi)) in [
            ("left", self.left),
            ("right", self.right),
            ("between", self.between),
            ("entire", self.entire),
        ] {
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return Err(Error::invalid(
                    name,
                    format!("interval ({lo}, {hi}) must be finite with lo ≤ hi"),
                ));
            }
        }
        if !(self.noise_std.is_finite() && self.noise_std >= 0.0) {
            return Err(Error::invalid(
                "noise_std",
                format!("must be finite and ≥ 0, got {}", self.noise_std),
            ));
        }
        Ok(())
    }
}

/// A set of (x, y) points, sorted by x.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WaveSet {
    /// Inputs (ascending).
    pub x: Vec<f64>,
    /// Noisy responses `f(x) + noise_std·ε`.
    pub y: Vec<f64>,
}

impl WaveSet {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }
}

/// All sets of the wave experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct WaveData {
    /// 40 training points in two clusters.
    pub train: WaveSet,
    /// "In": 20 points drawn from the clusters.
    pub in_clusters: WaveSet,
    /// "Between": 60 points between the clusters.
    pub between: WaveSet,
    /// "Entire": 120 points over (−2, 2).
    pub entire: WaveSet,
    /// Visualisation grid: 500 points of linspace(−2, 2), with noisy y like the other sets.
    pub grid: WaveSet,
}

impl WaveData {
    /// Generates every set (see the module docs for exactly how each is drawn).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] from [`WaveSettings::validate`].
    pub fn generate(s: &WaveSettings) -> Result<Self> {
        s.validate()?;
        Ok(WaveData {
            train: clusters(s, s.n_train_left, s.n_train_right),
            in_clusters: uniform_clusters(s, s.n_in)?,
            between: uniform_interval(s, s.between, s.n_between),
            entire: uniform_interval(s, s.entire, s.n_entire),
            grid: with_noise(s, linspace(s.entire.0, s.entire.1, s.n_grid)),
        })
    }
}

/// The noise-free wave `f(x)`.
pub fn wave_fn(x: f64, phase: WavePhase) -> f64 {
    use std::f64::consts::PI;
    let s = match phase {
        // numpy: 1.5 * sin(2π·1·t + 2/3·π) + 3.0·t − (−1.0)
        WavePhase::Code => (2.0 * PI * x + 2.0 / 3.0 * PI).sin(),
        WavePhase::Paper => (2.0 * PI * (x + 2.0 / 3.0)).sin(),
    };
    1.5 * s + 3.0 * x - (-1.0)
}

/// numpy's `linspace(start, stop, n)` (endpoint included): `start + i·step`, last point = `stop`.
pub fn linspace(start: f64, stop: f64, n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![start],
        _ => {
            let step = (stop - start) / (n - 1) as f64;
            let mut v: Vec<f64> = (0..n).map(|i| i as f64 * step + start).collect();
            v[n - 1] = stop;
            v
        }
    }
}

/// Sorts ascending (stable; the inputs never contain NaN).
fn sorted(mut x: Vec<f64>) -> Vec<f64> {
    x.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    x
}

/// Adds `y = f(x) + noise_std·randn(n)` with the generator reseeded first.
fn with_noise(s: &WaveSettings, x: Vec<f64>) -> WaveSet {
    let mut rs = LegacyRandomState::new(s.seed);
    let y = x
        .iter()
        .map(|&xi| wave_fn(xi, s.phase) + rs.standard_normal() * s.noise_std)
        .collect();
    WaveSet { x, y }
}

/// Two clusters: seed; `n_left` uniforms on `s.left`, then `n_right` on `s.right`; sorted; noisy y.
/// `clusters(s, 20, 20)` is the training set, `clusters(s, 10, 100)` the paper's imbalanced one.
pub fn clusters(s: &WaveSettings, n_left: usize, n_right: usize) -> WaveSet {
    let mut rs = LegacyRandomState::new(s.seed);
    let mut x = rs.uniform_vec(s.left.0, s.left.1, n_left);
    x.extend(rs.uniform_vec(s.right.0, s.right.1, n_right));
    with_noise(s, sorted(x))
}

/// `n` uniforms on `interval` after reseeding; sorted; noisy y.
pub fn uniform_interval(s: &WaveSettings, interval: (f64, f64), n: usize) -> WaveSet {
    let mut rs = LegacyRandomState::new(s.seed);
    with_noise(s, sorted(rs.uniform_vec(interval.0, interval.1, n)))
}

/// The "in" set: after reseeding, `n` times `binomial(2, 0.5)` and then one uniform from the left
/// cluster if it was non-zero, else from the right cluster; sorted; noisy y.
///
/// # Errors
/// None in practice (binomial(2, 0.5) is within the implemented inversion branch); the `Result`
/// carries [`LegacyRandomState::binomial`]'s error type.
pub fn uniform_clusters(s: &WaveSettings, n: usize) -> Result<WaveSet> {
    let mut rs = LegacyRandomState::new(s.seed);
    let mut x = Vec::with_capacity(n);
    for _ in 0..n {
        let (lo, hi) = if rs.binomial(2, 0.5)? != 0 {
            s.left
        } else {
            s.right
        };
        x.push(rs.uniform(lo, hi));
    }
    Ok(with_noise(s, sorted(x)))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by numpy 2.4.6 with the paper's recipe:
    //
    //   import numpy as np
    //   def f(t): return 1.5*np.sin(2*np.pi*t + 2/3*np.pi) + 3.0*t - (-1.0)
    //   def yv(x):
    //       np.random.seed(52); return f(x) + np.random.randn(x.shape[0])*0.1
    //   np.random.seed(52)
    //   c1 = np.random.uniform(-1.5,-0.5,size=(20,)); c2 = np.random.uniform(1.3,1.7,size=(20,))
    //   x = np.sort(np.concatenate([c1,c2]))
    //   print(x[[0,1,19,20,39]].tolist(), yv(x)[[0,1,19,20,39]].tolist())
    //   np.random.seed(52); xs=[]; bs=[]
    //   for _ in range(20):
    //       b = np.random.binomial(2,0.5); bs.append(int(b))
    //       xs.append(np.random.uniform(-1.5,-0.5) if b else np.random.uniform(1.3,1.7))
    //   xi = np.sort(np.array(xs)); print(bs, xi[[0,5,19]].tolist(), yv(xi)[[0,5,19]].tolist())
    //   for (lo,hi,n) in [(-0.5,1.3,60),(-2.0,2.0,120)]:
    //       np.random.seed(52); xb = np.sort(np.random.uniform(lo,hi,size=(n,)))
    //       print(xb[[0,1,n//2,n-1]].tolist(), yv(xb)[[0,1,n//2,n-1]].tolist())
    //   xl = np.linspace(-2,2,500); print(xl[[0,1,250,498,499]].tolist(), yv(xl)[[0,1,250,499]].tolist())
    //   np.random.seed(52); c1=np.random.uniform(-1.5,-0.5,size=(10,))
    //   c2=np.random.uniform(1.3,1.7,size=(100,)); xim=np.sort(np.concatenate([c1,c2]))
    //   print(xim[[0,9,10,109]].tolist())
    //   print(1.5*np.sin(2*np.pi*(xl[1]+2/3)) + 3*xl[1]+1)

    /// y goes through `sin`, which numpy may evaluate with a SIMD routine differing from libm in
    /// the last ulp; |y| < 10 here, so 1e-12 allows ~50 ulp.
    const Y_TOL: f64 = 1e-12;

    fn check_y(got: &[f64], idx: &[usize], want: &[f64]) {
        for (&i, &w) in idx.iter().zip(want) {
            assert!(
                (got[i] - w).abs() < Y_TOL,
                "y[{i}] = {} but numpy gives {w}",
                got[i]
            );
        }
    }

    fn pick(v: &[f64], idx: &[usize]) -> Vec<f64> {
        idx.iter().map(|&i| v[i]).collect()
    }

    /// The set's x at `idx` are exactly `x`, its y within [`Y_TOL`] of `y`.
    fn check_set(set: &WaveSet, idx: &[usize], x: &[f64], y: &[f64]) {
        assert_eq!(pick(&set.x, idx), x);
        check_y(&set.y, idx, y);
    }

    #[test]
    fn train_matches_numpy() {
        let d = WaveData::generate(&WaveSettings::default()).unwrap();
        let idx = [0, 1, 19, 20, 39];
        assert_eq!(d.train.len(), 40);
        check_set(
            &d.train,
            &idx,
            &[
                -1.4738820184301327,
                -1.4461097804015561,
                -0.5195706257849265,
                1.3080090236471942,
                1.6446562873092683,
            ],
            &[
                -4.528757729976833,
                -4.4413561826358325,
                -2.1147586507051495,
                3.84104125184766,
                5.698616168315543,
            ],
        );
    }

    #[test]
    fn in_set_matches_numpy_including_binomial_draws() {
        let s = WaveSettings::default();
        let mut rs = LegacyRandomState::new(52);
        let mut bs = Vec::new();
        for _ in 0..20 {
            let b = rs.binomial(2, 0.5).unwrap();
            bs.push(b);
            let (lo, hi) = if b != 0 { s.left } else { s.right };
            rs.uniform(lo, hi);
        }
        assert_eq!(
            bs,
            vec![2, 0, 0, 0, 2, 1, 2, 2, 2, 1, 1, 1, 1, 0, 2, 1, 1, 0, 1, 2]
        );
        let d = WaveData::generate(&s).unwrap();
        let idx = [0, 5, 19];
        assert_eq!(d.in_clusters.len(), 20);
        check_set(
            &d.in_clusters,
            &idx,
            &[-1.4799774408820148, -1.0848878138575087, 1.6842616231216954],
            &[-4.582651056972848, -0.7152956049291337, 6.043450588001785],
        );
    }

    #[test]
    fn between_and_entire_match_numpy() {
        let d = WaveData::generate(&WaveSettings::default()).unwrap();
        let idx = [0, 1, 30, 59];
        check_set(
            &d.between,
            &idx,
            &[
                -0.4639593935876268,
                -0.4529876331742388,
                0.4500156008375892,
                1.2647728735871322,
            ],
            &[
                -1.437414223334177,
                -1.5102810889627014,
                0.8804317697469065,
                3.9429983025742317,
            ],
        );
        let idx = [0, 1, 60, 119];
        check_set(
            &d.entire,
            &idx,
            &[
                -1.9825469058921312,
                -1.9293171442311072,
                0.059089353361061026,
                1.9773831579639287,
            ],
            &[
                -3.6865390469714123,
                -4.064048705008617,
                2.1807223529353896,
                8.234433303091112,
            ],
        );
    }

    #[test]
    fn grid_matches_numpy_linspace() {
        let d = WaveData::generate(&WaveSettings::default()).unwrap();
        assert_eq!(d.grid.len(), 500);
        assert_eq!(
            pick(&d.grid.x, &[0, 1, 250, 498, 499]),
            vec![
                -2.0,
                -1.9919839679358717,
                0.00400801603206391,
                1.9919839679358713,
                2.0
            ]
        );
        check_y(
            &d.grid.y,
            &[0, 1, 250, 499],
            &[
                -3.6490143102619257,
                -3.843194851364032,
                2.37343181896819,
                8.41289662537519,
            ],
        );
        assert!(linspace(0.0, 1.0, 0).is_empty());
        assert_eq!(linspace(3.0, 4.0, 1), vec![3.0]);
    }

    #[test]
    fn imbalanced_clusters_and_paper_phase() {
        let s = WaveSettings::default();
        let im = clusters(&s, 10, 100);
        assert_eq!(
            pick(&im.x, &[0, 9, 10, 109]),
            vec![
                -1.4738820184301327,
                -0.5195706257849265,
                1.301745309410787,
                1.6977383157963928
            ]
        );
        let x1 = linspace(-2.0, 2.0, 500)[1];
        assert!((wave_fn(x1, WavePhase::Paper) - -6.3111013790142305).abs() < Y_TOL);
        // The two phases differ by a third of a period.
        // Code at x equals Paper at x − 1/3, up to the linear term 3·(1/3) = 1.
        let diff = wave_fn(0.2, WavePhase::Code) - wave_fn(0.2 - 1.0 / 3.0, WavePhase::Paper);
        assert!((diff - 1.0).abs() < 1e-12, "{diff}");
    }

    #[test]
    fn settings_are_validated() {
        let s = WaveSettings {
            between: (1.0, 0.0),
            ..WaveSettings::default()
        };
        assert!(WaveData::generate(&s).is_err());
        let s = WaveSettings {
            noise_std: f64::NAN,
            ..WaveSettings::default()
        };
        assert!(WaveData::generate(&s).is_err());
    }
}
