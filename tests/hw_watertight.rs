//! Watertightness of the triangle test (`semantics.md` 7.2 step 7): rays aimed exactly at the
//! shared edges and vertices of a closed mesh hit exactly one of the adjacent triangles.
//!
//! The mesh is the surface of the octahedron |x| + |y| + |z| = 64, each face cut into 64
//! triangles on an integer lattice (step 8): 512 triangles, consistently wound, with planar
//! shared edges inside the faces and folded ones along the octahedron's edges and corners.
//! Targets are lattice vertices or points a + q (b - a) / 8 on edges (integer coordinates).
//! A ray starts outside at `target - m * d` and points along `d = p_in - target` towards an
//! integer point strictly inside, so its line crosses the surface exactly twice: once at the
//! target, once on the way out. Every value stays below 2^10, so the shear is exact and an
//! edge function whose real value is 0 is computed as exactly 0.

use std::collections::HashMap;

use wavetrace::hw::descriptor::TriangleReturnMode;
use wavetrace::hw::triangle::intersect_triangle;
use wavetrace::hw::{
    image_bvh_intersect_ray, BvhDescriptor, RayRegisters, TriangleNode, TRIANGLE_VERTICES,
};

const R: i32 = 64;
const N: i32 = 8;
const H: i32 = R / N;

type V = [i32; 3];

/// SplitMix64: a small seeded generator (no dependency needed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + self.below((hi - lo + 1) as u64) as i32
    }
}

fn mesh() -> Vec<[V; 3]> {
    let mut tris = Vec::new();
    for s in 0..8 {
        let sg = [
            if s & 1 == 0 { 1 } else { -1 },
            if s & 2 == 0 { 1 } else { -1 },
            if s & 4 == 0 { 1 } else { -1 },
        ];
        let p = |i: i32, j: i32| -> V { [sg[0] * i * H, sg[1] * j * H, sg[2] * (N - i - j) * H] };
        let flip = sg[0] * sg[1] * sg[2] < 0;
        let mut push = |a: V, b: V, c: V| tris.push(if flip { [a, c, b] } else { [a, b, c] });
        for i in 0..N {
            for j in 0..N - i {
                push(p(i, j), p(i + 1, j), p(i, j + 1));
                if i + j <= N - 2 {
                    push(p(i + 1, j), p(i + 1, j + 1), p(i, j + 1));
                }
            }
        }
    }
    tris
}

fn f(v: V) -> [f32; 3] {
    v.map(|c| c as f32)
}

struct Setup {
    tris: Vec<[V; 3]>,
    by_vertex: HashMap<V, Vec<usize>>,
    by_edge: HashMap<(V, V), Vec<usize>>,
}

fn setup() -> Setup {
    let tris = mesh();
    let mut by_vertex: HashMap<V, Vec<usize>> = HashMap::new();
    let mut by_edge: HashMap<(V, V), Vec<usize>> = HashMap::new();
    for (t, tri) in tris.iter().enumerate() {
        for e in 0..3 {
            by_vertex.entry(tri[e]).or_default().push(t);
            let (a, b) = (tri[e], tri[(e + 1) % 3]);
            by_edge.entry((a.min(b), a.max(b))).or_default().push(t);
        }
    }
    Setup {
        tris,
        by_vertex,
        by_edge,
    }
}

/// A target on an edge or vertex, the triangles touching it, and a ray through it.
fn aimed_ray(s: &Setup, rng: &mut Rng) -> (V, Vec<usize>, [f32; 3], [f32; 3]) {
    let tri = s.tris[rng.below(s.tris.len() as u64) as usize];
    let e = rng.below(3) as usize;
    let (a, b) = (tri[e], tri[(e + 1) % 3]);
    let (target, adjacent) = if rng.below(3) == 0 {
        (a, s.by_vertex[&a].clone())
    } else {
        let q = rng.range(1, 7);
        let t: V = std::array::from_fn(|i| a[i] + q * (b[i] - a[i]) / N);
        (t, s.by_edge[&(a.min(b), a.max(b))].clone())
    };
    let inside = loop {
        let p: V = [rng.range(-R, R), rng.range(-R, R), rng.range(-R, R)];
        if p[0].abs() + p[1].abs() + p[2].abs() < R {
            break p;
        }
    };
    let d: V = std::array::from_fn(|i| inside[i] - target[i]);
    let m = rng.range(1, 3);
    let origin: V = std::array::from_fn(|i| target[i] - m * d[i]);
    (target, adjacent, f(origin), f(d))
}

#[test]
fn mesh_is_closed() {
    let s = setup();
    assert_eq!(s.tris.len(), 512);
    // Every edge is shared by exactly two triangles.
    assert!(s.by_edge.values().all(|t| t.len() == 2));
}

#[test]
fn a_million_rays_at_edges_and_vertices_hit_exactly_one_adjacent_triangle() {
    let s = setup();
    let mut rng = Rng(0x5eed_0001);
    let (mut leaks, mut doubles, mut vertex_rays) = (0, 0, 0);
    const RAYS: usize = 1_000_000;
    for _ in 0..RAYS {
        let (target, adjacent, origin, dir) = aimed_ray(&s, &mut rng);
        if s.by_vertex.contains_key(&target) {
            vertex_rays += 1;
        }
        let mut hits = 0;
        for &t in &adjacent {
            let [v0, v1, v2] = s.tris[t].map(f);
            let r = intersect_triangle(v0, v1, v2, origin, dir);
            if r.hit {
                hits += 1;
            }
        }
        match hits {
            0 => leaks += 1,
            1 => {}
            _ => doubles += 1,
        }
    }
    assert_eq!((leaks, doubles), (0, 0), "of {RAYS} rays");
    assert!(vertex_rays > RAYS / 5, "vertex targets: {vertex_rays}");
}

#[test]
fn whole_mesh_rays_cross_exactly_twice_entering_and_leaving() {
    let s = setup();
    let mut rng = Rng(0x5eed_0002);
    let d = BvhDescriptor {
        triangle_return_mode: TriangleReturnMode::TriangleId,
        ..BvhDescriptor::default()
    };
    for n in 0..20_000 {
        let (_, _, origin, dir) = aimed_ray(&s, &mut rng);
        let ray = RayRegisters {
            extent: f32::INFINITY,
            origin,
            dir,
            inv_dir: dir.map(|c| 1.0 / c),
        };
        let mut denoms = Vec::new();
        for (t, tri) in s.tris.iter().enumerate() {
            // Through the instruction, each triangle stored as a random TRIk of a node.
            let k = (t + n) % 4;
            let mut verts = [[0.0f32; 3]; 5];
            for (slot, &vi) in TRIANGLE_VERTICES[k].iter().enumerate() {
                verts[vi] = f(tri[slot]);
            }
            let node = TriangleNode {
                vertices: verts,
                word: 0,
            };
            let r = image_bvh_intersect_ray(bytemuck::bytes_of(&node), &d, k as u32, &ray).dwords;
            if r[3] == 1 {
                denoms.push(f32::from_bits(r[1]));
            }
        }
        assert_eq!(denoms.len(), 2, "ray {n}: origin {origin:?} dir {dir:?}");
        assert!(
            denoms[0] * denoms[1] < 0.0,
            "ray {n}: one front, one back face: {denoms:?}"
        );
    }
}
