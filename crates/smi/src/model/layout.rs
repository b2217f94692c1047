//! Named slices of a flat vector: which columns of θ (or of a particle ψ) are which parameter,
//! and, for a model's θ, the constraint of each block (docs/algorithms.md §1: models work on
//! unconstrained θ; the layout says how θ maps to the parameters a user reads).

use serde::{Deserialize, Serialize};
use std::ops::Range;

use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::constraint::Constraint;

/// One named block of a flat parameter vector.
///
/// The block holds [`Block::len`] **unconstrained** values at [`Block::range`] of θ and stands
/// for [`Block::constrained_len`] constrained values of shape `shape`; the two lengths differ
/// only for a [`Constraint::Simplex`] (K constrained values from K − 1 unconstrained ones).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Name, e.g. `"layer1.weight"`, or `"layer1.weight.loc"` for a guide parameter.
    pub name: String,
    /// Shape of the block's constrained values, row-major (e.g. `[in, out]` for a weight
    /// matrix, `[]` for a scalar, `[K]` for a K-simplex).
    pub shape: Vec<usize>,
    /// First column of the block in the flat (unconstrained) vector.
    pub offset: usize,
    /// The support of the block and its transform from θ (default [`Constraint::Real`];
    /// omitted from the serialised form when real, so layouts saved before constraints
    /// existed load unchanged and real layouts serialise as they did).
    #[serde(default, skip_serializing_if = "Constraint::is_real")]
    pub constraint: Constraint,
}

impl Block {
    /// Number of unconstrained scalars of the block in θ (K − 1 for a K-simplex, else the
    /// product of `shape`).
    pub fn len(&self) -> usize {
        self.constraint.unconstrained_len(self.constrained_len())
    }

    /// Whether the block holds no unconstrained scalar.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column range of the block in θ (unconstrained).
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.len()
    }

    /// Number of constrained scalars (the product of `shape`, 1 for a scalar).
    pub fn constrained_len(&self) -> usize {
        self.shape.iter().product()
    }

    /// The names of the constrained scalars in Stan's flattened form: `"mu"` for a scalar
    /// (shape `[]`), `"theta[1]"`…`"theta[8]"` for a vector, `"X[1,1]"`, `"X[1,2]"`, … for a
    /// matrix (1-based indices, in the block's row-major order; Stan's CSV lists matrices
    /// column-major, under the same names).
    pub fn constrained_names(&self) -> Vec<String> {
        if self.shape.is_empty() {
            return vec![self.name.clone()];
        }
        let mut idx = vec![0usize; self.shape.len()];
        (0..self.constrained_len())
            .map(|_| {
                let label: Vec<String> = idx.iter().map(|i| (i + 1).to_string()).collect();
                // Row-major increment of the multi-index.
                for (i, &n) in idx.iter_mut().zip(&self.shape).rev() {
                    *i += 1;
                    if *i < n {
                        break;
                    }
                    *i = 0;
                }
                format!("{}[{}]", self.name, label.join(","))
            })
            .collect()
    }
}

/// An ordered list of contiguous named blocks covering `0..dim` of θ.
///
/// [`Layout::dim`] counts unconstrained columns (what engines and θ use);
/// [`Layout::constrained_dim`] counts the constrained values a user reads, in the same block
/// order ([`Layout::constrain`], [`Layout::constrained_names`]).
///
/// ```
/// use smi::{Constraint, Layout};
/// let mut l = Layout::default();
/// l.push("mu", vec![]);
/// l.push_constrained("tau", vec![], Constraint::Positive)?;
/// l.push_constrained("w", vec![3], Constraint::Simplex)?;
/// assert_eq!((l.dim(), l.constrained_dim()), (4, 5));
/// assert_eq!(l.constrained_names(), ["mu", "tau", "w[1]", "w[2]", "w[3]"]);
/// let mut x = vec![0.0; 5];
/// l.constrain(&[1.5, 0.0, 0.0, 0.0], &mut x)?;
/// assert!((x[1] - 1.0).abs() < 1e-15 && (x[2] - 1.0 / 3.0).abs() < 1e-15);
/// # Ok::<(), smi::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Layout {
    blocks: Vec<Block>,
}

impl Layout {
    /// A single block called `"theta"` of length `dim`.
    pub fn flat(dim: usize) -> Self {
        let mut l = Layout::default();
        l.push("theta", vec![dim]);
        l
    }

    /// Appends a real (unconstrained) block after the last one and returns its offset.
    pub fn push(&mut self, name: impl Into<String>, shape: Vec<usize>) -> usize {
        self.push_block(name.into(), shape, Constraint::Real)
    }

    /// Appends a block of constrained `shape` with `constraint` after the last one and returns
    /// its offset in θ.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] from [`Constraint::validate`] (bad bounds, an ordered or
    /// simplex block that is not 1-D, an empty simplex), naming the block.
    pub fn push_constrained(
        &mut self,
        name: impl Into<String>,
        shape: Vec<usize>,
        constraint: Constraint,
    ) -> Result<usize> {
        let name = name.into();
        constraint.validate(&shape).map_err(|e| match e {
            Error::InvalidSettings { field, reason } => Error::InvalidSettings {
                field,
                reason: format!("block `{name}`: {reason}"),
            },
            e => e,
        })?;
        Ok(self.push_block(name, shape, constraint))
    }

    fn push_block(&mut self, name: String, shape: Vec<usize>, constraint: Constraint) -> usize {
        let offset = self.dim();
        self.blocks.push(Block {
            name,
            shape,
            offset,
            constraint,
        });
        offset
    }

    /// Total unconstrained length d (the columns of θ).
    pub fn dim(&self) -> usize {
        self.blocks.last().map_or(0, |b| b.offset + b.len())
    }

    /// Total constrained length: Σ of [`Block::constrained_len`] (d plus one per simplex).
    pub fn constrained_dim(&self) -> usize {
        self.blocks.iter().map(Block::constrained_len).sum()
    }

    /// Whether every block is [`Constraint::Real`] (θ is the constrained vector).
    pub fn is_unconstrained(&self) -> bool {
        self.blocks.iter().all(|b| b.constraint.is_real())
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The block with the given name.
    pub fn get(&self, name: &str) -> Option<&Block> {
        self.blocks.iter().find(|b| b.name == name)
    }

    /// The names of the constrained values (length [`Layout::constrained_dim`]) in Stan's
    /// flattened form, block by block (see [`Block::constrained_names`]).
    pub fn constrained_names(&self) -> Vec<String> {
        self.blocks
            .iter()
            .flat_map(Block::constrained_names)
            .collect()
    }

    /// Each block with its range in θ and its range in the constrained vector.
    fn spans(&self) -> impl Iterator<Item = (&Block, Range<usize>, Range<usize>)> {
        self.blocks.iter().scan(0, |xo, b| {
            let xr = *xo..*xo + b.constrained_len();
            *xo = xr.end;
            Some((b, b.range(), xr))
        })
    }

    /// Checks a θ buffer of length d and a constrained buffer of length
    /// [`Layout::constrained_dim`].
    fn check(&self, u: usize, what: &str, x: usize) -> Result<()> {
        if u != self.dim() {
            return Err(Error::shape("layout: theta", self.dim(), u));
        }
        if x != self.constrained_dim() {
            return Err(Error::shape(
                format!("layout: {what}"),
                self.constrained_dim(),
                x,
            ));
        }
        Ok(())
    }

    /// x = T(θ): writes the constrained values of one unconstrained θ (length d) into `x`
    /// (length [`Layout::constrained_dim`]).
    ///
    /// # Errors
    /// [`Error::Shape`] when a length disagrees.
    pub fn constrain(&self, theta: &[f64], x: &mut [f64]) -> Result<()> {
        self.check(theta.len(), "constrained values", x.len())?;
        for (b, ur, xr) in self.spans() {
            b.constraint.forward(&theta[ur], &mut x[xr])?;
        }
        Ok(())
    }

    /// θ = T⁻¹(x): writes the unconstrained θ (length d) of the constrained values `x`.
    ///
    /// # Errors
    /// [`Error::Shape`] when a length disagrees; [`Error::Data`] naming the block when a value
    /// is outside its support (see [`Constraint::inverse`]).
    pub fn unconstrain(&self, x: &[f64], theta: &mut [f64]) -> Result<()> {
        self.check(theta.len(), "constrained values", x.len())?;
        for (b, ur, xr) in self.spans() {
            b.constraint
                .inverse_values(&x[xr], &mut theta[ur])
                .map_err(|reason| Error::Data(format!("block `{}`: {reason}", b.name)))?;
        }
        Ok(())
    }

    /// The constrained draws of n unconstrained draws: row i of the result (n ×
    /// [`Layout::constrained_dim`]) is [`Layout::constrain`] of row i of `theta` (n × d).
    ///
    /// # Errors
    /// [`Error::Shape`] unless `theta` has d columns.
    pub fn constrain_draws(&self, theta: &Matrix) -> Result<Matrix> {
        if theta.cols() != self.dim() {
            return Err(Error::shape("layout: draws", self.dim(), theta.cols()));
        }
        let mut out = Matrix::try_zeros(theta.rows(), self.constrained_dim())?;
        if self.is_unconstrained() {
            out.as_mut_slice().copy_from_slice(theta.as_slice());
            return Ok(out);
        }
        for i in 0..theta.rows() {
            self.constrain(theta.row(i), out.row_mut(i))?;
        }
        Ok(out)
    }

    /// The pull-back of a gradient for one θ: **adds** Jᵀ `grad_x` into `grad_theta` (J the
    /// Jacobian of [`Layout::constrain`]), plus ∇_θ log|det J| when `jacobian` is set, and
    /// returns log|det J| when `jacobian` is set (0 otherwise). `grad_x` is the gradient of a
    /// function of the constrained values (length [`Layout::constrained_dim`]).
    ///
    /// # Errors
    /// [`Error::Shape`] when a length disagrees.
    pub fn pull_back(
        &self,
        theta: &[f64],
        grad_x: &[f64],
        jacobian: bool,
        grad_theta: &mut [f64],
    ) -> Result<f64> {
        self.check(theta.len(), "grad_x", grad_x.len())?;
        self.check(grad_theta.len(), "grad_x", grad_x.len())?;
        Ok(self
            .spans()
            .map(|(b, ur, xr)| {
                b.constraint.pull_back_values(
                    &theta[ur.clone()],
                    Some(&grad_x[xr]),
                    jacobian,
                    &mut grad_theta[ur],
                )
            })
            .sum())
    }

    /// log|det J| of [`Layout::constrain`] at one θ (the sum over blocks), **adding** its
    /// gradient into `grad_theta` (length d): the term a model on unconstrained θ adds when
    /// [`crate::Batch::jacobian`] is set.
    ///
    /// # Errors
    /// [`Error::Shape`] unless `theta` and `grad_theta` have length d.
    pub fn log_abs_det_jacobian(&self, theta: &[f64], grad_theta: &mut [f64]) -> Result<f64> {
        let xd = self.constrained_dim();
        self.check(theta.len(), "constrained values", xd)?;
        self.check(grad_theta.len(), "constrained values", xd)?;
        Ok(self
            .blocks
            .iter()
            .map(|b| {
                let r = b.range();
                b.constraint
                    .pull_back_values(&theta[r.clone()], None, true, &mut grad_theta[r])
            })
            .sum())
    }

    /// A layout of the same blocks with `suffix` appended to each name, shifted by `offset`.
    ///
    /// The result names the columns of a parameter vector of the same length d, such as a
    /// guide's locations: its blocks are real, of the unconstrained shape (`[K − 1]` for a
    /// K-simplex, else the block's shape).
    pub fn suffixed(&self, suffix: &str, offset: usize) -> Layout {
        Layout {
            blocks: self
                .blocks
                .iter()
                .map(|b| Block {
                    name: format!("{}{}", b.name, suffix),
                    shape: match b.constraint {
                        Constraint::Simplex => vec![b.len()],
                        _ => b.shape.clone(),
                    },
                    offset: b.offset + offset,
                    constraint: Constraint::Real,
                })
                .collect(),
        }
    }

    /// The same blocks, each with a trailing axis of length `r` appended to its shape (its
    /// values r times as many, offsets following one another): the names of a d × r matrix's
    /// rows by block, such as the low-rank guide's factor W.
    pub fn with_trailing_dim(&self, r: usize) -> Layout {
        let mut out = Layout::default();
        for b in &self.blocks {
            let mut shape = b.shape.clone();
            shape.push(r);
            out.push_block(b.name.clone(), shape, b.constraint);
        }
        out
    }

    /// Concatenation of two layouts (the second shifted to follow the first, constraints
    /// kept).
    pub fn concat(&self, other: &Layout) -> Layout {
        let mut out = self.clone();
        for b in &other.blocks {
            out.push_block(b.name.clone(), b.shape.clone(), b.constraint);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_shapes() {
        let mut l = Layout::default();
        assert_eq!(l.push("w", vec![2, 3]), 0);
        assert_eq!(l.push("b", vec![3]), 6);
        assert_eq!(l.dim(), 9);
        assert_eq!(l.get("b").unwrap().range(), 6..9);
        let g = l.suffixed(".loc", 0).concat(&l.suffixed(".scale", 0));
        assert_eq!(g.dim(), 18);
        assert_eq!(g.get("w.scale").unwrap().range(), 9..15);
    }

    fn mixed() -> Layout {
        let mut l = Layout::default();
        l.push("mu", vec![]);
        l.push_constrained("tau", vec![], Constraint::Positive)
            .unwrap();
        l.push_constrained("p", vec![3], Constraint::Simplex)
            .unwrap();
        l.push_constrained("c", vec![2], Constraint::Ordered)
            .unwrap();
        l.push_constrained(
            "r",
            vec![2, 2],
            Constraint::Bounded {
                lower: -1.0,
                upper: 1.0,
            },
        )
        .unwrap();
        l
    }

    #[test]
    fn constrained_lengths_names_and_ranges() {
        let l = mixed();
        assert_eq!(l.dim(), 1 + 1 + 2 + 2 + 4);
        assert_eq!(l.constrained_dim(), l.dim() + 1);
        assert_eq!(l.get("p").unwrap().range(), 2..4);
        assert_eq!(l.get("c").unwrap().range(), 4..6);
        assert_eq!(
            l.constrained_names(),
            [
                "mu", "tau", "p[1]", "p[2]", "p[3]", "c[1]", "c[2]", "r[1,1]", "r[1,2]", "r[2,1]",
                "r[2,2]"
            ]
        );
        let mut l3 = Layout::default();
        l3.push("a", vec![2, 1, 2]);
        assert_eq!(
            l3.constrained_names(),
            ["a[1,1,1]", "a[1,1,2]", "a[2,1,1]", "a[2,1,2]"]
        );
        // Guide layouts are real, of the unconstrained shape.
        let g = l.suffixed(".loc", 0);
        assert!(g.is_unconstrained() && g.dim() == l.dim());
        assert_eq!(g.get("p.loc").unwrap().shape, vec![2]);
        let e = l
            .clone()
            .push_constrained("bad", vec![2, 2], Constraint::Ordered)
            .unwrap_err()
            .to_string();
        assert!(e.contains("block `bad`"), "{e}");
    }

    #[test]
    fn constrain_and_unconstrain_round_trip_block_by_block() {
        let l = mixed();
        let theta: Vec<f64> = (0..l.dim()).map(|i| (i as f64 * 0.9).sin()).collect();
        let mut x = vec![0.0; l.constrained_dim()];
        l.constrain(&theta, &mut x).unwrap();
        assert_eq!(x[0], theta[0]);
        assert!((x[1] - theta[1].exp()).abs() < 1e-15);
        assert!((x[2..5].iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert!(x[6] > x[5]);
        let mut back = vec![0.0; l.dim()];
        l.unconstrain(&x, &mut back).unwrap();
        for (a, b) in theta.iter().zip(&back) {
            // Composition of exp/ln and logistic/logit on O(1) values: rounding ≈ 1e-15.
            assert!((a - b).abs() < 1e-12, "{theta:?} vs {back:?}");
        }
        x[1] = -1.0;
        let e = l.unconstrain(&x, &mut back).unwrap_err().to_string();
        assert!(e.contains("block `tau`"), "{e}");
        assert!(l.constrain(&theta[1..], &mut x).is_err());
        // Draws: row by row.
        let draws = Matrix::from_rows(&[theta.clone(), theta.clone()]).unwrap();
        let xd = l.constrain_draws(&draws).unwrap();
        l.constrain(&theta, &mut x).unwrap();
        assert_eq!(xd.row(1), &x[..]);
    }

    #[test]
    fn whole_layout_pull_back_is_the_sum_of_the_blocks() {
        // The per-constraint pull-backs are checked against finite differences in
        // `constraint.rs`; here only the bookkeeping of offsets: with grad_x = e_j the pull-back
        // is row j of the Jacobian, checked by central differences (h = 1e-6, error ≈ 1e-10).
        let l = mixed();
        let theta: Vec<f64> = (0..l.dim()).map(|i| (i as f64 * 0.7).cos()).collect();
        let (d, xd, h) = (l.dim(), l.constrained_dim(), 1e-6);
        for j in 0..xd {
            let mut gx = vec![0.0; xd];
            gx[j] = 1.0;
            let mut gu = vec![0.0; d];
            assert_eq!(l.pull_back(&theta, &gx, false, &mut gu).unwrap(), 0.0);
            for c in 0..d {
                let (mut up, mut dn) = (theta.clone(), theta.clone());
                up[c] += h;
                dn[c] -= h;
                let (mut xu, mut xl) = (vec![0.0; xd], vec![0.0; xd]);
                l.constrain(&up, &mut xu).unwrap();
                l.constrain(&dn, &mut xl).unwrap();
                let fd = (xu[j] - xl[j]) / (2.0 * h);
                assert!((fd - gu[c]).abs() < 1e-8, "x{j} u{c}: {fd} vs {}", gu[c]);
            }
        }
        let mut gj = vec![0.0; d];
        let lj = l.log_abs_det_jacobian(&theta, &mut gj).unwrap();
        let mut gp = vec![0.0; d];
        let lp = l.pull_back(&theta, &vec![0.0; xd], true, &mut gp).unwrap();
        assert_eq!((lj, &gj), (lp, &gp));
        let expect: f64 = l
            .blocks()
            .iter()
            .map(|b| b.constraint.log_abs_det_jacobian(&theta[b.range()]))
            .sum();
        assert_eq!(lj, expect);
    }

    #[test]
    fn layouts_saved_without_constraints_still_load() {
        // The serialised form of a real block is unchanged (no `constraint` key), so files
        // written before constraints existed (smi-fit model files, checkpoints) load as real.
        let old = r#"{"blocks":[{"name":"w","shape":[2,3],"offset":0},{"name":"b","shape":[3],"offset":6}]}"#;
        let l: Layout = serde_json::from_str(old).unwrap();
        let mut expect = Layout::default();
        expect.push("w", vec![2, 3]);
        expect.push("b", vec![3]);
        assert_eq!(l, expect);
        assert_eq!(serde_json::to_string(&l).unwrap(), old);
        let m = mixed();
        let back: Layout = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }
}
