//! Named slices of a flat vector: which columns of θ (or of a particle ψ) are which parameter.

use serde::{Deserialize, Serialize};
use std::ops::Range;

/// One named block of a flat parameter vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Name, e.g. `"layer1.weight"`, or `"layer1.weight.loc"` for a guide parameter.
    pub name: String,
    /// Shape of the block, row-major (e.g. `[in, out]` for a weight matrix).
    pub shape: Vec<usize>,
    /// First column of the block in the flat vector.
    pub offset: usize,
}

impl Block {
    /// Number of scalars in the block.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the block holds no scalar.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Column range of the block.
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.len()
    }
}

/// An ordered list of contiguous named blocks covering `0..dim`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
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

    /// Appends a block after the last one and returns its offset.
    pub fn push(&mut self, name: impl Into<String>, shape: Vec<usize>) -> usize {
        let offset = self.dim();
        self.blocks.push(Block {
            name: name.into(),
            shape,
            offset,
        });
        offset
    }

    /// Total length.
    pub fn dim(&self) -> usize {
        self.blocks.last().map_or(0, |b| b.offset + b.len())
    }

    /// The blocks, in order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The block with the given name.
    pub fn get(&self, name: &str) -> Option<&Block> {
        self.blocks.iter().find(|b| b.name == name)
    }

    /// A layout of the same blocks with `suffix` appended to each name, shifted by `offset`.
    pub fn suffixed(&self, suffix: &str, offset: usize) -> Layout {
        Layout {
            blocks: self
                .blocks
                .iter()
                .map(|b| Block {
                    name: format!("{}{}", b.name, suffix),
                    shape: b.shape.clone(),
                    offset: b.offset + offset,
                })
                .collect(),
        }
    }

    /// Concatenation of two layouts (the second shifted to follow the first).
    pub fn concat(&self, other: &Layout) -> Layout {
        let mut out = self.clone();
        for b in &other.blocks {
            out.push(b.name.clone(), b.shape.clone());
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
}
