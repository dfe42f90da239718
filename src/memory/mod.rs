//! The memory system: the machine description, set-associative LRU caches (L0 per CU, L1
//! per shader array, L2), DRAM, and an event-driven timing model of waves whose node
//! fetches go through them ([`MemoryModel`]).
//!
//! The wave loop records each wave instruction's node fetches ([`FetchLog`]) when the
//! [`Counters`](crate::counters::Counters) it counts into ask for it; the model then runs
//! the recorded dispatches in wave order. Nothing here knows how the fetches were made.

pub mod cache;
pub mod fetch;
pub mod machine;
pub mod model;

pub use fetch::{Dispatch, FetchLog};
pub use machine::Machine;
pub use model::{Bound, MemoryModel, MemoryReport, MemoryStats};
