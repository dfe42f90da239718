//! The path tracer: every ray goes through a [`crate::wave::Tracer`].
//!
//! (Being written.)
