//! UCI, MNIST and wave data for the SMI experiments.
