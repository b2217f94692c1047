//! `Matrix`: the one dense, row-major `f64` matrix type of the public API.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A dense row-major matrix of `f64`.
///
/// Used everywhere the API passes a batch of vectors: K×d parameter draws (one draw per row),
/// m×p particles (one particle per row), m×m kernel matrices. `data[i * cols + j]` is entry
/// (i, j). Hot paths work on [`Matrix::as_slice`] directly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Matrix {
    /// An all-zero `rows × cols` matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Matrix {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    /// Wraps a row-major buffer.
    ///
    /// # Errors
    /// [`Error::Shape`] if `data.len() != rows * cols`.
    pub fn from_vec(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self> {
        if data.len() != rows * cols {
            return Err(Error::shape(
                "Matrix::from_vec",
                format!("{rows}×{cols} = {} values", rows * cols),
                data.len(),
            ));
        }
        Ok(Matrix { rows, cols, data })
    }

    /// Builds a matrix from equal-length rows.
    ///
    /// # Errors
    /// [`Error::Shape`] if the rows differ in length.
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self> {
        let cols = rows.first().map_or(0, Vec::len);
        let mut data = Vec::with_capacity(rows.len() * cols);
        for (i, r) in rows.iter().enumerate() {
            if r.len() != cols {
                return Err(Error::shape(
                    format!("Matrix::from_rows, row {i}"),
                    cols,
                    r.len(),
                ));
            }
            data.extend_from_slice(r);
        }
        Ok(Matrix {
            rows: rows.len(),
            cols,
            data,
        })
    }

    /// Builds a matrix from a function of (row, column).
    pub fn from_fn(rows: usize, cols: usize, mut f: impl FnMut(usize, usize) -> f64) -> Self {
        let mut data = Vec::with_capacity(rows * cols);
        for i in 0..rows {
            for j in 0..cols {
                data.push(f(i, j));
            }
        }
        Matrix { rows, cols, data }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Entry (i, j). Panics when out of bounds, like slice indexing.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.cols + j]
    }

    /// Sets entry (i, j). Panics when out of bounds, like slice indexing.
    pub fn set(&mut self, i: usize, j: usize, v: f64) {
        self.data[i * self.cols + j] = v;
    }

    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// Row `i` as a mutable slice.
    pub fn row_mut(&mut self, i: usize) -> &mut [f64] {
        &mut self.data[i * self.cols..(i + 1) * self.cols]
    }

    /// Iterator over rows.
    pub fn iter_rows(&self) -> impl Iterator<Item = &[f64]> {
        self.data.chunks_exact(self.cols.max(1)).take(self.rows)
    }

    /// The row-major buffer.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// The row-major buffer, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.data
    }

    /// Consumes the matrix, returning its buffer.
    pub fn into_vec(self) -> Vec<f64> {
        self.data
    }

    /// Frobenius norm sqrt(Σ a_ij²).
    pub fn frobenius_norm(&self) -> f64 {
        self.data.iter().map(|v| v * v).sum::<f64>().sqrt()
    }

    /// Whether every entry is finite.
    pub fn is_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }

    /// Column means (length `cols`).
    pub fn col_means(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.cols];
        for r in self.iter_rows() {
            for (o, v) in out.iter_mut().zip(r) {
                *o += v;
            }
        }
        let n = self.rows.max(1) as f64;
        out.iter_mut().for_each(|o| *o /= n);
        out
    }

    /// Column variances with ddof 0 (length `cols`).
    pub fn col_variances(&self) -> Vec<f64> {
        let mean = self.col_means();
        let mut out = vec![0.0; self.cols];
        for r in self.iter_rows() {
            for ((o, v), m) in out.iter_mut().zip(r).zip(&mean) {
                *o += (v - m) * (v - m);
            }
        }
        let n = self.rows.max(1) as f64;
        out.iter_mut().for_each(|o| *o /= n);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_vec_checks_shape() {
        assert!(Matrix::from_vec(2, 3, vec![0.0; 5]).is_err());
        let m = Matrix::from_vec(2, 3, (0..6).map(f64::from).collect()).unwrap();
        assert_eq!(m.get(1, 2), 5.0);
        assert_eq!(m.row(1), &[3.0, 4.0, 5.0]);
    }

    #[test]
    fn column_moments() {
        let m = Matrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 6.0]]).unwrap();
        assert_eq!(m.col_means(), vec![2.0, 4.0]);
        assert_eq!(m.col_variances(), vec![1.0, 4.0]);
    }
}
