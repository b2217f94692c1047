//! `Matrix`: the one dense, row-major `f64` matrix type of the public API.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A dense row-major matrix of `f64`.
///
/// Used everywhere the API passes a batch of vectors: K×d parameter draws (one draw per row),
/// m×p particles (one particle per row), m×m kernel matrices. `data[i * cols + j]` is entry
/// (i, j). Hot paths work on [`Matrix::as_slice`] directly.
///
/// Deserialising checks that `data` holds exactly `rows × cols` values (a corrupt file is an
/// error, not a later out-of-bounds panic).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(try_from = "RawMatrix")]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

/// The serialised form of [`Matrix`], checked by `TryFrom` before it becomes one.
#[derive(Deserialize)]
struct RawMatrix {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl TryFrom<RawMatrix> for Matrix {
    type Error = Error;

    fn try_from(raw: RawMatrix) -> Result<Self> {
        Matrix::from_vec(raw.rows, raw.cols, raw.data)
    }
}

/// `rows × cols`, or [`Error::Shape`] when the product overflows `usize`.
fn checked_len(context: &str, rows: usize, cols: usize) -> Result<usize> {
    rows.checked_mul(cols).ok_or_else(|| {
        Error::shape(
            context,
            "rows × cols within the address space",
            format!("{rows}×{cols}, whose product overflows"),
        )
    })
}

/// A zero-filled buffer of `len` values, or an error (instead of aborting the process) when the
/// allocation fails or exceeds the address space. `what` names the buffer in the message.
pub(crate) fn try_zeros_vec(len: usize, what: &str) -> Result<Vec<f64>> {
    let mut data = Vec::new();
    try_resize(&mut data, len, what)?;
    Ok(data)
}

/// Resizes `buf` to `len` values (new ones zero), reporting an allocation failure as
/// [`Error::Shape`] instead of aborting. `what` names the buffer in the message.
pub(crate) fn try_resize<T: Clone + Default>(
    buf: &mut Vec<T>,
    len: usize,
    what: &str,
) -> Result<()> {
    if let Some(extra) = len.checked_sub(buf.len()).filter(|&e| e > 0) {
        buf.try_reserve_exact(extra).map_err(|e| {
            Error::shape(
                what,
                "a buffer that can be allocated",
                format!(
                    "{len} values ({:.3e} bytes): {e}",
                    len as f64 * std::mem::size_of::<T>() as f64
                ),
            )
        })?;
    }
    buf.resize(len, T::default());
    Ok(())
}

impl Matrix {
    /// An all-zero `rows × cols` matrix.
    ///
    /// # Panics
    /// If `rows × cols` overflows or the buffer cannot be allocated (as `vec!` does); sizes that
    /// come from user input go through [`Matrix::try_zeros`].
    pub fn zeros(rows: usize, cols: usize) -> Self {
        // An overflowing product asks for usize::MAX values, which `vec!` refuses with its
        // "capacity overflow" panic instead of silently wrapping to a short buffer.
        let len = rows.saturating_mul(cols);
        Matrix {
            rows,
            cols,
            data: vec![0.0; len],
        }
    }

    /// An all-zero `rows × cols` matrix, for sizes that come from user settings or files.
    ///
    /// # Errors
    /// [`Error::Shape`] if `rows × cols` overflows `usize`, or the buffer is larger than the
    /// address space or than the allocator can provide (instead of aborting the process).
    pub fn try_zeros(rows: usize, cols: usize) -> Result<Self> {
        let len = checked_len("Matrix::try_zeros", rows, cols)?;
        let data = try_zeros_vec(len, &format!("a {rows}×{cols} matrix"))?;
        Ok(Matrix { rows, cols, data })
    }

    /// Wraps a row-major buffer.
    ///
    /// # Errors
    /// [`Error::Shape`] if `data.len() != rows * cols` (or that product overflows).
    pub fn from_vec(rows: usize, cols: usize, data: Vec<f64>) -> Result<Self> {
        let len = checked_len("Matrix::from_vec", rows, cols)?;
        if data.len() != len {
            return Err(Error::shape(
                "Matrix::from_vec",
                format!("{rows}×{cols} = {len} values"),
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
        let mut data = Vec::with_capacity(rows.iter().map(Vec::len).sum());
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
    ///
    /// # Panics
    /// As [`Matrix::zeros`], for a size that overflows or cannot be allocated.
    pub fn from_fn(rows: usize, cols: usize, mut f: impl FnMut(usize, usize) -> f64) -> Self {
        let mut data = Vec::with_capacity(rows.saturating_mul(cols));
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
        // whole chunks without an early exit (so the test vectorises), then the rest
        let (chunks, rest) = self.data.as_chunks::<64>();
        chunks
            .iter()
            .all(|c| c.iter().fold(true, |ok, v| ok & v.is_finite()))
            && rest.iter().all(|v| v.is_finite())
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
    fn from_vec_rejects_a_shape_whose_size_overflows() {
        // 2^32 · 2^32 wraps to 0 in release builds: an empty buffer must not pass for it.
        assert!(matches!(
            Matrix::from_vec(1 << 32, 1 << 32, Vec::new()),
            Err(Error::Shape { .. })
        ));
    }

    #[test]
    fn deserialising_checks_the_buffer_length() {
        let ok: Matrix = serde_json::from_str(r#"{"rows":2,"cols":1,"data":[1.0,2.0]}"#).unwrap();
        assert_eq!(ok.row(1), &[2.0]);
        let back: Matrix = serde_json::from_str(&serde_json::to_string(&ok).unwrap()).unwrap();
        assert_eq!(back, ok);
        for bad in [
            r#"{"rows":2,"cols":3,"data":[1.0,2.0]}"#,
            r#"{"rows":1,"cols":1,"data":[1.0,2.0]}"#,
            r#"{"rows":4294967296,"cols":4294967296,"data":[]}"#,
        ] {
            let err = serde_json::from_str::<Matrix>(bad).unwrap_err().to_string();
            assert!(err.contains("shape mismatch"), "{bad}: {err}");
        }
    }

    #[test]
    fn try_zeros_reports_sizes_that_cannot_be_allocated() {
        let m = Matrix::try_zeros(3, 2).unwrap();
        assert_eq!(m, Matrix::zeros(3, 2));
        // Overflowing product, more bytes than the address space, more than any allocator has.
        for (rows, cols) in [(usize::MAX, 2), (1 << 61, 1), (1 << 29, 1 << 29)] {
            assert!(
                matches!(Matrix::try_zeros(rows, cols), Err(Error::Shape { .. })),
                "{rows}×{cols}"
            );
        }
    }

    #[test]
    fn column_moments() {
        let m = Matrix::from_rows(&[vec![1.0, 2.0], vec![3.0, 6.0]]).unwrap();
        assert_eq!(m.col_means(), vec![2.0, 4.0]);
        assert_eq!(m.col_variances(), vec![1.0, 4.0]);
    }
}
