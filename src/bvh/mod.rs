//! Hardware-agnostic BVH build (binned SAH, 4-wide collapse), quality metrics, the encoder
//! that writes the hardware byte image, and a validator that reads it back.
//!
//! (Being written.)
