//! Traversal "shaders": per-lane loops that issue one intersect instruction per step.
//!
//! (Being written.)
