//! Evaluation metrics (spec §8): regression, classification, statistics.
