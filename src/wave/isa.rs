//! The instruction sets the wave loop is compiled for, chosen once at run time.
//!
//! The hot loop is one generic body, compiled once per [`Isa`] the way Embree compiles one
//! kernel per instruction set: [`Portable`] (the target's baseline, SSE2 on x86-64 and NEON
//! on aarch64, through `wide`) and, on x86-64, [`Avx2`]. [`Isa::dispatch`] enters code
//! compiled with the instruction set's target features; everything the kernel inlines is
//! compiled with them too.
//!
//! An [`Avx2`] value ([`crate::host::Avx2`]) is the proof that the CPU has every feature the
//! AVX2 build enables: only [`Avx2::detect`] makes one, after checking each of
//! [`Avx2::FEATURES`] (the list every `#[target_feature]` in the crate draws from;
//! `tests/target_features.rs` checks this). So the AVX2 kernels are safe functions that take
//! the token, and their `unsafe` blocks cite it. Every build gives bit-identical results:
//! the AVX2 kernels run the same f32 operations in the same order as the portable ones (Rust
//! never contracts to FMA).

use super::intersect::{TriangleBatch, TriangleRay, BATCH_LANES, LANES};
#[cfg(target_arch = "x86_64")]
use crate::host::Avx2Kernel;
use crate::hw::descriptor::TriangleReturnMode;
use crate::hw::{NodePointer, TriangleNode};

pub use crate::host::Avx2;

/// An instruction set the wave loop is compiled for.
pub trait Isa: Copy + Send + Sync + 'static {
    /// Name in reports ("portable", "avx2").
    const NAME: &'static str;

    /// Triangle tests the batch runs at once ([`Isa::run_triangles`]).
    const TRIANGLE_BATCH: usize;

    /// The AVX2 kernels (box pairs, eight lanes at once), when this build has them.
    fn avx2(self) -> Option<Avx2>;

    /// Runs `kernel` in code compiled with this instruction set's features (inlined into
    /// the caller when the caller has them too).
    fn dispatch<K: IsaKernel>(self, kernel: K) -> K::Output;

    /// [`Self::dispatch`], never inlined: for rarely taken work that should not grow the
    /// hot loop's code.
    fn dispatch_out_of_line<K: IsaKernel>(self, kernel: K) -> K::Output;

    /// Bit i set = `nodes[i]` is a box pointer (type 4 or 5). At most 64 nodes; the AVX2
    /// build needs a multiple of eight.
    fn box_pointer_mask(self, nodes: &[NodePointer]) -> u64;

    /// Gathers triangle `k` of `node` for the prepared `ray` as the batch's next lane.
    fn push_triangle(
        self,
        batch: &mut TriangleBatch,
        node: &TriangleNode,
        k: usize,
        ray: &TriangleRay,
    );

    /// Runs the gathered triangle tests: element j is gathered lane j's four dwords
    /// (elements past the batch's length are unspecified).
    fn run_triangles(
        self,
        batch: &TriangleBatch,
        mode: TriangleReturnMode,
    ) -> [[u32; 4]; BATCH_LANES];

    /// Writes `children[n - 1 - j]` to `buf[top + j]` for `j < n` (the slots up to
    /// `top + 3` may get any value), then returns `buf[top + n - 1]`: a full stack's push of
    /// a sorted box result, or its pop when `n == 0`. One four-slot vector store, with no
    /// bounds check: a stack's push runs once a box lane step.
    ///
    /// # Safety
    /// `n <= 4`; `buf` points to at least `top + 4` pointers; `top >= 3`, and `top >= 4`
    /// when `n == 0`.
    unsafe fn write_reversed_prefix(
        self,
        buf: *mut NodePointer,
        top: usize,
        children: [NodePointer; 4],
        n: usize,
    ) -> NodePointer;
}

/// Work that [`Isa::dispatch`] runs compiled for an instruction set.
pub trait IsaKernel {
    type Output;

    /// The work, for instruction set `isa`. Implementations mark it `#[inline(always)]`, so
    /// that it is compiled inside the dispatching function, with its features.
    fn run<I: Isa>(self, isa: I) -> Self::Output;
}

/// The target's baseline instruction set: every build has it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Portable;

impl Isa for Portable {
    const NAME: &'static str = "portable";
    const TRIANGLE_BATCH: usize = LANES;

    #[inline(always)]
    fn avx2(self) -> Option<Avx2> {
        None
    }

    #[inline(always)]
    fn dispatch<K: IsaKernel>(self, kernel: K) -> K::Output {
        kernel.run(self)
    }

    #[inline(never)]
    fn dispatch_out_of_line<K: IsaKernel>(self, kernel: K) -> K::Output {
        kernel.run(self)
    }

    #[inline(always)]
    fn box_pointer_mask(self, nodes: &[NodePointer]) -> u64 {
        super::intersect::box_pointer_mask(nodes)
    }

    #[inline(always)]
    fn push_triangle(
        self,
        batch: &mut TriangleBatch,
        node: &TriangleNode,
        k: usize,
        ray: &TriangleRay,
    ) {
        batch.push_prepared(node, k, ray);
    }

    #[inline(always)]
    fn run_triangles(
        self,
        batch: &TriangleBatch,
        mode: TriangleReturnMode,
    ) -> [[u32; 4]; BATCH_LANES] {
        let mut dwords = [[0u32; 4]; BATCH_LANES];
        dwords[..LANES].copy_from_slice(&batch.run(mode));
        dwords
    }

    #[inline(always)]
    unsafe fn write_reversed_prefix(
        self,
        buf: *mut NodePointer,
        top: usize,
        children: [NodePointer; 4],
        n: usize,
    ) -> NodePointer {
        // SAFETY: the caller's contract is this function's.
        unsafe { super::intersect::write_reversed_prefix(buf, top, children, n) }
    }
}

#[cfg(target_arch = "x86_64")]
impl Isa for Avx2 {
    const NAME: &'static str = "avx2";
    const TRIANGLE_BATCH: usize = BATCH_LANES;

    #[inline(always)]
    fn avx2(self) -> Option<Avx2> {
        Some(self)
    }

    #[inline(always)]
    fn dispatch<K: IsaKernel>(self, kernel: K) -> K::Output {
        self.run(WithAvx2 { kernel, isa: self })
    }

    #[inline(always)]
    fn dispatch_out_of_line<K: IsaKernel>(self, kernel: K) -> K::Output {
        self.run_out_of_line(WithAvx2 { kernel, isa: self })
    }

    #[inline(always)]
    fn box_pointer_mask(self, nodes: &[NodePointer]) -> u64 {
        super::intersect::box_pointer_mask_avx2(self, nodes)
    }

    #[inline(always)]
    fn push_triangle(
        self,
        batch: &mut TriangleBatch,
        node: &TriangleNode,
        k: usize,
        ray: &TriangleRay,
    ) {
        batch.push_prepared_avx2(self, node, k, ray);
    }

    #[inline(always)]
    fn run_triangles(
        self,
        batch: &TriangleBatch,
        mode: TriangleReturnMode,
    ) -> [[u32; 4]; BATCH_LANES] {
        batch.run_avx2(self, mode)
    }

    #[inline(always)]
    unsafe fn write_reversed_prefix(
        self,
        buf: *mut NodePointer,
        top: usize,
        children: [NodePointer; 4],
        n: usize,
    ) -> NodePointer {
        // SAFETY: the caller's contract is this function's.
        unsafe { super::intersect::write_reversed_prefix_avx2(self, buf, top, children, n) }
    }
}

/// An [`IsaKernel`] for [`Avx2::run`]: the kernel, and the token it runs with.
#[cfg(target_arch = "x86_64")]
struct WithAvx2<K> {
    kernel: K,
    isa: Avx2,
}

#[cfg(target_arch = "x86_64")]
impl<K: IsaKernel> Avx2Kernel for WithAvx2<K> {
    type Output = K::Output;

    #[inline(always)]
    fn run(self) -> K::Output {
        self.kernel.run(self.isa)
    }
}

/// Off x86-64 there is no [`Avx2`] value: every method is unreachable.
#[cfg(not(target_arch = "x86_64"))]
impl Isa for Avx2 {
    const NAME: &'static str = "avx2";
    const TRIANGLE_BATCH: usize = BATCH_LANES;

    fn avx2(self) -> Option<Avx2> {
        match self {}
    }

    fn dispatch<K: IsaKernel>(self, _: K) -> K::Output {
        match self {}
    }

    fn dispatch_out_of_line<K: IsaKernel>(self, _: K) -> K::Output {
        match self {}
    }

    fn box_pointer_mask(self, _: &[NodePointer]) -> u64 {
        match self {}
    }

    fn push_triangle(self, _: &mut TriangleBatch, _: &TriangleNode, _: usize, _: &TriangleRay) {
        match self {}
    }

    fn run_triangles(self, _: &TriangleBatch, _: TriangleReturnMode) -> [[u32; 4]; BATCH_LANES] {
        match self {}
    }

    unsafe fn write_reversed_prefix(
        self,
        _: *mut NodePointer,
        _: usize,
        _: [NodePointer; 4],
        _: usize,
    ) -> NodePointer {
        match self {}
    }
}
