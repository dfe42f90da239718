//! The memory the instruction fetches from, and the prefetch hints of the wave loops.

use crate::hw::descriptor::BvhDescriptor;
use crate::hw::NodePointer;

/// The memory the instruction fetches from: `bytes` mapped at virtual address `va`.
#[derive(Clone, Copy, Debug)]
pub struct BvhMemory<'a> {
    pub bytes: &'a [u8],
    pub va: u64,
}

impl BvhMemory<'_> {
    /// Byte offset in `bytes` of the node `ptr` points to, if `len` bytes are mapped there
    /// and the offset is 64-byte aligned.
    #[inline]
    pub fn offset(
        &self,
        descriptor: &BvhDescriptor,
        ptr: NodePointer,
        len: usize,
    ) -> Option<usize> {
        let address = ptr.fetch_address(descriptor.base_address_256);
        let offset = usize::try_from(address.checked_sub(self.va)?).ok()?;
        if offset.checked_add(len)? <= self.bytes.len() {
            Some(offset)
        } else {
            None
        }
    }
}

/// Prefetches `lines` 64-byte cache lines from `p` (a hint; no-op off x86-64).
#[inline(always)]
pub fn prefetch_lines(p: *const u8, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for l in 0..lines {
        // SAFETY: prefetching is a hint and never faults, whatever the address.
        unsafe {
            core::arch::x86_64::_mm_prefetch(
                p.wrapping_add(64 * l) as *const i8,
                core::arch::x86_64::_MM_HINT_T0,
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, lines);
}

/// Prefetches the two 64-byte lines at byte `offset` from `base` (a hint; no-op off x86-64).
///
/// Written as two `prefetcht0` with the base and offset registers and a displacement: LLVM
/// computes the second line's address with two extra additions (this is run once a lane
/// step).
#[inline(always)]
pub fn prefetch_two_lines(base: *const u8, offset: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint and never faults, whatever the address; the instructions
    // write no register, memory or flag.
    unsafe {
        core::arch::asm!(
            "prefetcht0 [{b} + {o}]",
            "prefetcht0 [{b} + {o} + 64]",
            b = in(reg) base,
            o = in(reg) offset,
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (base, offset);
}
