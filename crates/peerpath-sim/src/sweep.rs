//! What-if sweeps.
