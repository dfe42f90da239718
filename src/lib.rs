//! # wavetrace
//!
//! A CPU model of the XBOX Series X|S (AMD RDNA2) ray-tracing hardware: the exact BVH formats
//! and the `image_bvh_intersect_ray` instruction ([`hw`]), a builder that writes that byte
//! image ([`bvh`]), a wave model that runs rays in lanes and counts TD clocks ([`wave`]),
//! and a path tracer on top ([`render`]).
//!
//! Layers, bottom to top (a module uses only those below it): `error`, `host`, `math`, `hw`,
//! `tiling`, `bvh`, `counters`, `wave`, `traverse`, `scene`, `render`, `profile`; `shard`
//! (splitting a job for a cluster scheduler, and its part files) uses only `error`. See
//! ARCHITECTURE.md.
//!
//! ```
//! use wavetrace::hw::{BvhDescriptor, NodePointer, NodeType};
//! let desc = BvhDescriptor::default();
//! assert_eq!(BvhDescriptor::from_dwords(desc.to_dwords()).unwrap(), desc);
//! assert_eq!(NodePointer::new(2, NodeType::BoxF32).to_u32(), 0x15);
//! ```

pub mod bvh;
pub mod counters;
pub mod error;
pub mod fuzzing;
pub mod host;
pub mod hw;
pub mod math;
pub mod memory;
pub mod outfile;
pub mod profile;
pub mod render;
pub mod report;
pub mod scene;
pub mod shard;
pub mod tiling;
pub mod traverse;
pub mod vectors;
pub mod wave;

pub use error::{Error, Result};
