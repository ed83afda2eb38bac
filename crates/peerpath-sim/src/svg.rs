//! SVG line plots for sweeps (no dependencies).
