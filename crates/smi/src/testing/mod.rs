//! Targets with known moments, for tests, doctests, examples and benchmarks: a diagonal
//! Gaussian, a Bayesian linear regression with a closed-form posterior, and Neal's funnel (a
//! small hierarchical target); and [`check_gradient`], a finite-difference check of any
//! model's gradient.

mod diag_normal;
mod funnel;
mod gradient;
mod linreg;

pub use diag_normal::DiagNormal;
pub use funnel::Funnel;
pub use gradient::check_gradient;
pub use linreg::BayesLinReg;
