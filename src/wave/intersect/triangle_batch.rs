//! Triangle queries gathered across lanes and tested together.

#[cfg(target_arch = "x86_64")]
use super::avx2::{transpose_eight, Avx8};
use super::triangle_test::{triangle_dwords, TriangleLanes};
use super::{LaneRay, TriangleRay, BATCH_LANES, LANES};
use crate::hw::descriptor::TriangleReturnMode;
use crate::hw::node::TRIANGLE_VERTICES;
use crate::hw::TriangleNode;
#[cfg(target_arch = "x86_64")]
use crate::wave::isa::Avx2;
use crate::wave::isa::Portable;
use wide::f32x4;

/// Up to [`BATCH_LANES`] triangle queries gathered across lanes: per gathered lane, its
/// triangle's three vertices and its ray's origin and direction as rows (x, y, z, unused),
/// already rotated so that the ray's dominant axis is "z" (`semantics.md` 7.2 step 1).
/// [`Self::run`] turns the rows into columns (element j of each is gathered lane j).
///
/// Why rows: a lane's vertex is then one 16-byte load and one permute by the ray's rotation
/// ([`Self::push_prepared_avx2`]), where a column layout took nine scalar loads and stores a
/// lane, and the vector loads of the columns spanned four scalar stores each.
///
/// 16-byte aligned, `rows` first: every row is aligned, for the exact loads of
/// [`Self::run_avx2`].
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
pub struct TriangleBatch {
    /// `rows[j]`: gathered lane j's vertices 0-2 (triangle k's, in hardware order), then its
    /// origin and direction.
    rows: [[[f32; 4]; 5]; BATCH_LANES],
    /// Word at byte 60 of each node (the triangle ID or IJ-control word).
    word: [u32; BATCH_LANES],
    /// Triangle index k (pointer bits 1:0).
    k: [u32; BATCH_LANES],
    len: usize,
}

// Every row of a batch is 16-byte aligned (the exact loads of `TriangleBatch::run_avx2`).
const _: () = assert!(
    std::mem::align_of::<TriangleBatch>() == 16 && std::mem::offset_of!(TriangleBatch, rows) == 0
);

// The 16 bytes `TriangleBatch::push_prepared_avx2` loads at each vertex stay inside the node.
const _: () = {
    let mut k = 0;
    while k < 4 {
        let mut i = 0;
        while i < 3 {
            assert!(4 * (3 * TRIANGLE_VERTICES[k][i] + 4) <= 64);
            i += 1;
        }
        k += 1;
    }
};

impl TriangleBatch {
    /// Gathered lanes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `n` lanes are gathered (`n` = the test's width: [`LANES`] for [`Self::run`],
    /// [`BATCH_LANES`] for [`Self::run_avx2`]).
    #[inline(always)]
    pub fn holds(&self, n: usize) -> bool {
        self.len == n
    }

    /// Empties the batch.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Gathers triangle `k` of `node` for `ray` as the next lane. Panics when the batch is
    /// full.
    #[inline(always)]
    pub fn push(&mut self, node: &TriangleNode, k: usize, ray: &LaneRay) {
        self.push_prepared(node, k, &TriangleRay::new(ray));
    }

    /// [`Self::push`] for a ray prepared once ([`TriangleRay`]).
    #[inline(always)]
    pub fn push_prepared(&mut self, node: &TriangleNode, k: usize, ray: &TriangleRay) {
        let j = self.len;
        // Dword index of vertex v's component a: 3v + a <= 14. (The mask keeps the compiler
        // from checking bounds it cannot prove.)
        let dwords = node.dwords();
        let word = |w: usize| f32::from_bits(dwords[w & 15]);
        for (row, &v) in self.rows[j].iter_mut().zip(&TRIANGLE_VERTICES[k & 3]) {
            for (x, &a) in row.iter_mut().zip(&ray.rotation[..3]) {
                *x = word(3 * v + a as usize);
            }
        }
        self.finish_push(node, k, ray);
    }

    /// [`Self::push_prepared`] with AVX: each vertex is one 16-byte load (its three words and
    /// the next) and one permute by the ray's rotation (`vpermilps`). The same rows.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn push_prepared_avx2(
        &mut self,
        _: Avx2,
        node: &TriangleNode,
        k: usize,
        ray: &TriangleRay,
    ) {
        use core::arch::x86_64::*;
        let j = self.len;
        assert!(j < BATCH_LANES, "the batch is full");
        let words = node.vertices.as_ptr() as *const f32;
        // SAFETY: the token proves AVX; vertex v <= 4 (asserted at compile time above) spans
        // words 3v..3v + 3 <= 15, inside the 64-byte node; `j < BATCH_LANES`.
        unsafe {
            let control = _mm_loadu_si128(ray.rotation.as_ptr() as *const __m128i);
            let row = self.rows.as_mut_ptr().add(j) as *mut f32;
            for (i, &v) in TRIANGLE_VERTICES[k & 3].iter().enumerate() {
                let vertex = _mm_loadu_ps(words.add(3 * v));
                _mm_storeu_ps(row.add(4 * i), _mm_permutevar_ps(vertex, control));
            }
        }
        self.finish_push(node, k, ray);
    }

    /// What both pushes share: the ray's rows, the node's word and k, the count.
    #[inline(always)]
    fn finish_push(&mut self, node: &TriangleNode, k: usize, ray: &TriangleRay) {
        let j = self.len;
        self.rows[j][3] = ray.origin;
        self.rows[j][4] = ray.dir;
        self.word[j] = node.word;
        self.k[j] = k as u32;
        self.len = j + 1;
    }

    /// Which triangle each gathered lane asks for.
    #[inline(always)]
    fn lanes(&self) -> TriangleLanes<'_> {
        TriangleLanes {
            count: self.len,
            words: &self.word,
            indices: &self.k,
        }
    }

    /// Row `r` of the gathered lanes as three columns (x, y, z): element j of each is lane j's.
    #[inline(always)]
    fn columns(&self, r: usize) -> [f32x4; 3] {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::*;
            // SAFETY: SSE is part of x86-64; unaligned 16-byte loads of the four rows.
            unsafe {
                // (No array `map` here: in the wave loop it was left out of line.)
                let a = _mm_loadu_ps(self.rows[0][r].as_ptr());
                let b = _mm_loadu_ps(self.rows[1][r].as_ptr());
                let c = _mm_loadu_ps(self.rows[2][r].as_ptr());
                let d = _mm_loadu_ps(self.rows[3][r].as_ptr());
                let ab_lo = _mm_unpacklo_ps(a, b);
                let cd_lo = _mm_unpacklo_ps(c, d);
                let ab_hi = _mm_unpackhi_ps(a, b);
                let cd_hi = _mm_unpackhi_ps(c, d);
                let column = |v: __m128| core::mem::transmute::<__m128, f32x4>(v);
                [
                    column(_mm_movelh_ps(ab_lo, cd_lo)),
                    column(_mm_movehl_ps(cd_lo, ab_lo)),
                    column(_mm_movelh_ps(ab_hi, cd_hi)),
                ]
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            [0, 1, 2].map(|c| f32x4::new(std::array::from_fn(|j| self.rows[j][r][c])))
        }
    }

    /// Runs the gathered queries at once (`semantics.md` 7.2-7.6): element j of the result
    /// is gathered lane j's four dwords (elements past [`Self::len`] are unspecified).
    /// At most [`LANES`] gathered.
    #[inline(always)]
    pub fn run(&self, mode: TriangleReturnMode) -> [[u32; 4]; LANES] {
        debug_assert!(self.len <= LANES);
        // Rows past `len` hold stale values: computed and ignored.
        // (Written out, not `[0, 1, 2, 3, 4].map(..)`: LLVM leaves that call out of line.)
        let columns = [
            self.columns(0),
            self.columns(1),
            self.columns(2),
            self.columns(3),
            self.columns(4),
        ];
        triangle_dwords(Portable, self.lanes(), mode, columns)
    }

    /// Row `r` of up to eight gathered lanes as three AVX columns (x, y, z).
    ///
    /// Each row is read with exactly one 16-byte load: the rows were written a moment ago,
    /// 16 bytes at a time. Left to itself, LLVM widens the load of a row whose upper half
    /// the transpose's insert replaces to 32 bytes, which spans the next row's separate
    /// store: the CPU cannot forward two stores into one load, and the load waits for both
    /// to reach the cache (measured 1.03x on bunny's primary rays). A volatile read is never
    /// widened.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn columns_avx2(&self, isa: Avx2, r: usize) -> [Avx8; 3] {
        use core::arch::x86_64::__m128;
        let b = &self.rows;
        // (A macro, not a closure: a closure would be compiled without AVX.)
        macro_rules! row {
            ($j:expr) => {
                // SAFETY: every row is 16-byte aligned (`rows` is the first field of the
                // 16-byte aligned batch, rows are 16 bytes: asserted above), as an aligned
                // volatile read of an `__m128` needs.
                unsafe { core::ptr::read_volatile(b[$j][r].as_ptr() as *const __m128) }
            };
        }
        let rows = [
            row!(0),
            row!(1),
            row!(2),
            row!(3),
            row!(4),
            row!(5),
            row!(6),
            row!(7),
        ];
        let [x, y, z, _] = transpose_eight(isa, rows);
        [Avx8(x, isa), Avx8(y, isa), Avx8(z, isa)]
    }

    /// [`Self::run`] for up to [`BATCH_LANES`] gathered lanes, eight per AVX vector: the
    /// same f32 operations in the same order, so each lane's dwords are the same.
    ///
    /// Why: the AVX2 wave loop gathers the triangle lanes of a step and tests them when the
    /// batch is full and at the step's end. With four per test, the step's last test ran
    /// on 1.7 lanes on average (bunny's primary rays); with eight, the shared scenes' ray
    /// sets need 34-42 % fewer tests, at about the same host instructions each.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub fn run_avx2(&self, isa: Avx2, mode: TriangleReturnMode) -> [[u32; 4]; BATCH_LANES] {
        let columns = [
            self.columns_avx2(isa, 0),
            self.columns_avx2(isa, 1),
            self.columns_avx2(isa, 2),
            self.columns_avx2(isa, 3),
            self.columns_avx2(isa, 4),
        ];
        triangle_dwords(isa, self.lanes(), mode, columns)
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::wave::intersect::test_rng::xorshift;

    /// The AVX2 push gathers what the indexed push gathers: the same vertex components,
    /// origin and direction for every triangle slot and every dominant axis (ties included),
    /// so the batch returns the same dwords in both modes. Nodes hold random words, zeros and
    /// repeated values.
    #[test]
    fn push_prepared_avx2_gathers_what_push_prepared_gathers() {
        let Some(avx2) = Avx2::detect() else {
            eprintln!("skipped: this CPU has no AVX2");
            return;
        };
        let mut next = xorshift(0xBB67_AE85_84CA_A73B_u64);
        let mut value = || {
            let r = next();
            match r % 8 {
                0 => 0.0,
                1 => 1.0,
                2 => -1.0,
                _ => {
                    f32::from_bits(0x3000_0000 + (r >> 40) as u32 % 0x1800_0000)
                        * if r & 1 << 20 == 0 { 1.0 } else { -1.0 }
                }
            }
        };
        let mut axes = [0u32; 3];
        for case in 0..5_000u32 {
            let (mut indexed, mut permuted) = (TriangleBatch::default(), TriangleBatch::default());
            for j in 0..LANES {
                let node = TriangleNode {
                    vertices: std::array::from_fn(|_| [value(), value(), value()]),
                    word: value().to_bits(),
                };
                let dir = [value(), value(), value()];
                let ray = LaneRay {
                    extent: 10.0,
                    origin: [value(), value(), value()],
                    dir,
                    inv_dir: dir.map(|d| 1.0 / d),
                };
                let prepared = TriangleRay::new(&ray);
                axes[prepared.rotation[2] as usize] += 1;
                let k = (case as usize + j) % 4;
                indexed.push_prepared(&node, k, &prepared);
                // (Called from code not compiled for AVX2, the intrinsics are calls: the
                // same results.)
                permuted.push_prepared_avx2(avx2, &node, k, &prepared);
            }
            let bits = |b: &TriangleBatch, j: usize, r: usize| b.rows[j][r].map(f32::to_bits);
            for j in 0..LANES {
                for r in 0..5 {
                    // The vertex rows' last element is unused (the AVX push loads the next
                    // word).
                    let n = if r < 3 { 3 } else { 4 };
                    assert_eq!(
                        bits(&indexed, j, r)[..n],
                        bits(&permuted, j, r)[..n],
                        "{case}"
                    );
                }
                assert_eq!(
                    (indexed.word[j], indexed.k[j]),
                    (permuted.word[j], permuted.k[j])
                );
            }
            for mode in [
                TriangleReturnMode::TriangleId,
                TriangleReturnMode::Barycentrics,
            ] {
                assert_eq!(indexed.run(mode), permuted.run(mode), "case {case}");
            }
        }
        // Every dominant axis occurred.
        assert!(axes.iter().all(|&n| n > 1000), "{axes:?}");
    }
}
