//! Large pages for large buffers.
//!
//! The tracer reads the BVH image at scattered addresses (45 MB for the dragon); with 4 KiB
//! pages those reads miss the TLB, and every first touch of a page is a kernel fault. Traced
//! from huge pages, the dragon's diffuse rays run about 1.16x as fast (`docs/performance.md`,
//! "Host memory"; the build's time does not change measurably).
//!
//! [`HugePageAllocator`] is the system allocator plus one hint: new blocks of
//! [`HUGE_PAGE_THRESHOLD`] bytes or more are marked for transparent huge pages
//! (`madvise(MADV_HUGEPAGE)`, Linux only; Embree's `os_malloc` gives the same hint). The hint
//! changes no byte of any result, only how the kernel backs the memory; where the kernel has
//! no huge pages to give, or off Linux, nothing changes at all.
//!
//! One kind of block is better off without the hint: a large buffer written once, in order,
//! right after it is allocated (the encoder's BVH image). Writing in order gains nothing from
//! fewer TLB misses, and on this machine class the first touch of fresh huge pages costs
//! more than that of small pages (a 45 MB block: about 50 ms against 16 ms, in a C program
//! that only touches the pages; the kernel must find, and the host back, whole 2 MiB pages).
//! [`without_huge_pages`] turns the hint off for the blocks one thread allocates meanwhile.
//!
//! The library never installs it: a program opts in with
//! `#[global_allocator] static A: HugePageAllocator = HugePageAllocator;`,
//! as the `wavetrace` binary and the benchmarks do.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Blocks at least this large get the huge-page hint (two 2 MiB pages: a smaller block has
/// at most one whole aligned huge page inside it, not worth a system call).
pub const HUGE_PAGE_THRESHOLD: usize = 4 << 20;

thread_local! {
    /// Set while this thread runs [`without_huge_pages`]. (A `const` cell with no destructor:
    /// the allocator may read it at any point of the thread's life.)
    static PLAIN_PAGES: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`; the blocks this thread allocates meanwhile get no huge-page hint (module docs:
/// for buffers written once, in order). Nothing changes where the allocator is not
/// installed, and no byte of any result changes either way.
pub fn without_huge_pages<T>(f: impl FnOnce() -> T) -> T {
    /// Restores the previous setting, also when `f` unwinds.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PLAIN_PAGES.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(PLAIN_PAGES.with(|c| c.replace(true)));
    f()
}

/// Whether this thread's new large blocks get the hint now.
fn hint_wanted() -> bool {
    !PLAIN_PAGES.with(Cell::get)
}

/// The size of an x86-64 and aarch64 (4 KiB granule) transparent huge page.
const HUGE_PAGE: usize = 2 << 20;

/// The system allocator, with the transparent-huge-page hint on large new blocks (module
/// docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct HugePageAllocator;

// SAFETY: every block comes from and goes back to `System` with the caller's layout
// unchanged; the hint only touches whole pages inside the block just allocated.
unsafe impl GlobalAlloc for HugePageAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let block = unsafe { System.alloc(layout) };
        advise_huge_pages(block, layout.size());
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`. glibc serves a large zeroed block from a fresh mapping that
        // nothing has touched yet, so the hint is in place before its first fault.
        let block = unsafe { System.alloc_zeroed(layout) };
        advise_huge_pages(block, layout.size());
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // No hint on a grown block: its old pages are faulted in already, and with the hint
        // here parsing the dragon (whose vectors grow) took 1.09x the time of the plain
        // system allocator, against 1.04x without it (medians of 12 alternating rounds).
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(block, layout, new_size) }
    }
}

/// The whole huge pages inside `[start, start + len)`: `None` when the block is below the
/// threshold or holds no aligned huge page.
fn huge_page_span(start: usize, len: usize) -> Option<(usize, usize)> {
    if len < HUGE_PAGE_THRESHOLD {
        return None;
    }
    let first = start.checked_add(HUGE_PAGE - 1)? & !(HUGE_PAGE - 1);
    let end = start.checked_add(len)? & !(HUGE_PAGE - 1);
    (end > first).then(|| (first, end - first))
}

/// Marks the whole huge pages of a block for transparent huge pages; failures are ignored
/// (the memory stays as it was).
fn advise_huge_pages(block: *mut u8, len: usize) {
    if block.is_null() || !hint_wanted() {
        return;
    }
    let Some((first, span)) = huge_page_span(block as usize, len) else {
        return;
    };
    #[cfg(target_os = "linux")]
    // SAFETY: `[first, first + span)` lies inside the block just allocated (whole pages of
    // it); MADV_HUGEPAGE changes how the kernel backs those pages, never their contents.
    unsafe {
        libc::madvise(first as *mut libc::c_void, span, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (first, span);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_is_the_whole_huge_pages_inside_the_block() {
        // Below the threshold: no hint.
        assert_eq!(huge_page_span(0, HUGE_PAGE_THRESHOLD - 1), None);
        // Aligned start: every whole page.
        assert_eq!(
            huge_page_span(4 * HUGE_PAGE, 5 * HUGE_PAGE + 7),
            Some((4 * HUGE_PAGE, 5 * HUGE_PAGE))
        );
        // Unaligned start: from the next boundary to the last one inside.
        let start = 4 * HUGE_PAGE + 4096;
        assert_eq!(
            huge_page_span(start, 3 * HUGE_PAGE),
            Some((5 * HUGE_PAGE, 2 * HUGE_PAGE))
        );
        // The threshold's worth from just past a boundary: one whole page inside.
        assert_eq!(
            huge_page_span(HUGE_PAGE + 1, HUGE_PAGE_THRESHOLD),
            Some((2 * HUGE_PAGE, HUGE_PAGE))
        );
        // The top of the address space does not wrap.
        assert_eq!(
            huge_page_span(usize::MAX - HUGE_PAGE, HUGE_PAGE_THRESHOLD),
            None
        );
    }

    #[test]
    fn without_huge_pages_holds_for_its_closure_only() {
        assert!(hint_wanted());
        let inner = without_huge_pages(|| {
            // Nested calls keep the hint off until the outermost one ends.
            let nested = without_huge_pages(hint_wanted);
            (nested, hint_wanted())
        });
        assert_eq!(inner, (false, false));
        assert!(hint_wanted());
        // Other threads are not affected.
        without_huge_pages(|| {
            assert!(std::thread::spawn(hint_wanted).join().unwrap());
        });
        // A closure that panics still restores the hint.
        let unwound = std::panic::catch_unwind(|| without_huge_pages(|| panic!("inside")));
        assert!(unwound.is_err());
        assert!(hint_wanted());
    }

    #[test]
    fn blocks_through_the_allocator_keep_their_contents() {
        let a = HugePageAllocator;
        let layout = Layout::from_size_align(HUGE_PAGE_THRESHOLD + 12_345, 64).unwrap();
        // SAFETY: the layout is non-zero; every block is freed with the layout it has.
        unsafe {
            let zeroed = a.alloc_zeroed(layout);
            assert!(!zeroed.is_null());
            let bytes = std::slice::from_raw_parts_mut(zeroed, layout.size());
            assert!(bytes.iter().all(|&b| b == 0));
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = (i % 251) as u8;
            }
            let grown = a.realloc(zeroed, layout, 3 * layout.size());
            assert!(!grown.is_null());
            let kept = std::slice::from_raw_parts(grown, layout.size());
            assert!(kept.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
            a.dealloc(
                grown,
                Layout::from_size_align(3 * layout.size(), 64).unwrap(),
            );
        }
    }
}
