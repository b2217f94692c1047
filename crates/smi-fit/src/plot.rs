//! The embedded font (DejaVu Sans, so no system font library is needed) and PNG checks, for
//! every figure of `smi` (behind the `plot` feature).

use std::sync::Once;

use plotters::style::FontStyle;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static INIT: Once = Once::new();

/// The family name to use in every `TextStyle` / `("sans-serif", size)`.
pub const FONT_FAMILY: &str = "sans-serif";

/// Registers the embedded font under [`FONT_FAMILY`] (idempotent). Call before drawing.
pub fn init_font() {
    INIT.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold, FontStyle::Italic] {
            // The font is compiled in and known to parse; a failure would only lose labels.
            let _ = plotters::style::register_font(FONT_FAMILY, style, FONT);
        }
    });
}

/// Checks that `path` starts with the PNG signature (for tests and `report`).
pub fn is_png(path: &std::path::Path) -> bool {
    std::fs::read(path)
        .map(|b| b.starts_with(&[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]))
        .unwrap_or(false)
}
