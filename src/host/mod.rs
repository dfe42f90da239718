//! What the emulator asks of the host: large pages for large buffers ([`pages`]), and the
//! CPU's name for the speed reports and the proof that it has the features the AVX2 builds
//! enable ([`cpu`]).

pub mod cpu;
pub mod pages;

pub use cpu::{cpu_name, Avx2, Avx2Kernel};
pub use pages::{without_huge_pages, HugePageAllocator, HUGE_PAGE_THRESHOLD};
