//! Evaluation metrics (docs/algorithms.md §8): regression, classification, statistics, and the
//! variance-collapse measures of docs/algorithms.md §7.1.
//!
//! Every function validates its shapes and returns [`crate::Error`] instead of panicking.
//! Where the paper's numbers depend on an artifact of its evaluation code (per-particle NLL for
//! SVGD/ASVGD, LPPD without 1/S, sampled-label accuracy, the unweighted ECE with empty-bin
//! effects) the artifact and the proper metric are both provided, under distinct names.

mod classification;
mod regression;
mod stats;
mod variance;

pub use classification::{
    argmax_accuracy_per_draw, brier_per_draw, classification_metrics, nll_per_draw,
    paper_calibration, paper_calibration_per_draw, sampled_accuracy_confidence,
    standard_calibration, standard_calibration_per_draw, Calibration, ClassProbs,
    ClassificationMetrics, SampledAccuracy, PAPER_BINS,
};
pub use regression::{
    central_interval, central_interval_per_point, gaussian_log_lik, hdi, hdi_per_point, lppd,
    lppd_log_sum, mixture_nll, per_draw_nll, pointwise_log_predictive, quantile,
    regression_metrics, rmse, rmse_of_mean, Interval, RegressionMetrics,
};
pub use stats::{
    logsumexp, mann_whitney_u, mann_whitney_u_with, mean, not_worse_than_best, std, Alternative,
    Better, MannWhitney, MeanStd, MwuMethod, PAPER_ALPHA,
};
pub use variance::{
    frobenius_to_identity, mean_location, mixture_variance, particle_variance, VarianceSummary,
};
