//! Targets with known moments, for tests, doctests, examples and benchmarks: a diagonal
//! Gaussian and a Bayesian linear regression with a closed-form posterior.

mod diag_normal;
mod linreg;

pub use diag_normal::DiagNormal;
pub use linreg::BayesLinReg;
