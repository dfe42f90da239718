//! Large build buffers on transparent huge pages.
//!
//! The build and the encoder fill about 200 MB of fresh memory for a million triangles
//! (references, the binary tree, the 4-wide tree, the image and its side tables). With
//! 4 KiB pages that is some 50 000 page faults, about a sixth of the single-threaded build
//! time; asking the kernel for 2 MiB pages on these buffers (as Embree's allocator does)
//! turns them into a few hundred. Where the OS offers no such pages nothing changes: this
//! is a hint only, never a change of contents.

/// Buffers smaller than this gain nothing worth a system call.
const MIN_BYTES: usize = 4 << 20;

/// Asks for huge pages on the allocation of `v` (its whole capacity). Call it right after
/// allocating, before the memory is first written: pages already mapped stay small.
pub fn advise_huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::{c_int, c_void};
        extern "C" {
            fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
        }
        /// `MADV_HUGEPAGE` (Linux, all architectures).
        const MADV_HUGEPAGE: c_int = 14;
        const PAGE: usize = 4096;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < MIN_BYTES {
            return;
        }
        // The whole pages inside the allocation.
        let start = (v.as_ptr() as usize).next_multiple_of(PAGE);
        let end = (v.as_ptr() as usize + bytes) & !(PAGE - 1);
        if end > start {
            // SAFETY: the range lies inside memory this process owns (the vector's
            // allocation); MADV_HUGEPAGE changes how later faults map it, never its
            // contents. A failure (no huge page support) is ignored: it is a hint.
            unsafe {
                madvise(start as *mut c_void, end - start, MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// `n` zeroed elements on huge pages (see [`advise_huge_pages`]). The allocation is
/// zeroed by the allocator, which for large sizes means fresh, not yet mapped pages.
pub fn zeroed_vec<T: bytemuck::Zeroable + Clone>(n: usize) -> Vec<T> {
    let v = vec![T::zeroed(); n];
    advise_huge_pages(&v);
    v
}
