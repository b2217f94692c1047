//! Built-in models with analytic gradients. One file per model family.
