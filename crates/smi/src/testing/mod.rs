//! Targets with known moments, for tests, doctests, examples and benchmarks: a diagonal
//! Gaussian, a Bayesian linear regression with a closed-form posterior, and Neal's funnel (a
//! small hierarchical target).

mod diag_normal;
mod funnel;
mod linreg;

pub use diag_normal::DiagNormal;
pub use funnel::Funnel;
pub use linreg::BayesLinReg;
