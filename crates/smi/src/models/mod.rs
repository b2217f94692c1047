//! Built-in models with analytic gradients. One file per model family.

pub mod bnn_classifier;
pub mod bnn_regression;
pub mod linreg;
pub mod mlp;
pub mod mvn;

pub use bnn_classifier::BnnClassifier;
pub use bnn_regression::{BnnRegression, Noise, RegressionPrediction};
pub use linreg::BayesLinReg;
pub use mlp::{Activation, Head, Mlp, MlpFloat, Precision};
pub use mvn::DiagNormal;
