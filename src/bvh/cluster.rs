//! Fan clusters for leaf chains ([`BuildOptions::leaf_chains`](super::BuildOptions)): groups
//! of 2 to 4 mesh triangles that fit one triangle node in slots `0..count`.
//!
//! The node's four triangles are a fan around V2: tri0 = (V0, V1, V2), tri1 = (V1, V3, V2),
//! tri2 = (V3, V4, V2) and tri3 = (V4, V0, V2) up to rotation. So a cluster is a run of
//! edge-adjacent triangles around one centre vertex `c`, each written `(x_i, x_{i+1}, c)`
//! in the mesh's (consistently wound) order: 2 or 3 consecutive fan triangles, or 4 when the
//! fan closes (the centre has exactly four triangles around it). Vertices are matched by
//! their exact position bits. Greedy, in file order: each unclustered triangle takes the
//! longest run through it over its three possible centres.

use super::Mesh;

/// A cluster: `count` triangles, slot k holding `(prim, r)`: mesh vertex j of `prim` is
/// stored at node vertex `TRIANGLE_VERTICES[k][(j + r) % 3]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cluster {
    pub tris: [(u32, u8); 4],
    pub count: u8,
}

/// Clusters the triangles `prims` (finite ones, in file order) into runs of at most
/// `max_per_node` (2 or 4; with 4 an open fan gives at most 3).
pub fn fan_clusters(mesh: &Mesh, prims: &[u32], max_per_node: u8) -> Vec<Cluster> {
    let mut clusterer = Clusterer {
        adjacency: Adjacency::new(mesh, prims),
        clustered: vec![false; mesh.len()],
        max_per_node,
    };
    let mut out = Vec::with_capacity(prims.len() / 2 + 1);
    for &t in prims {
        if clusterer.clustered[t as usize] {
            continue;
        }
        let run = clusterer.best_run(t);
        out.push(clusterer.take(run));
    }
    out
}

/// The mesh's connectivity by vertex position: vertex ids by exact position bits, each
/// triangle's vertex ids, and the triangles (of those clustered) around each vertex.
struct Adjacency {
    /// Per mesh triangle: its three vertex ids.
    vertex_ids: Vec<[u32; 3]>,
    /// Compressed rows: the triangles around vertex v are `around[start[v]..start[v + 1]]`.
    start: Vec<u32>,
    around: Vec<u32>,
}

impl Adjacency {
    fn new(mesh: &Mesh, prims: &[u32]) -> Adjacency {
        // Vertex ids by exact position bits (sort, then number the distinct keys).
        let bits: Vec<[u32; 3]> = mesh.positions.iter().map(|p| p.map(f32::to_bits)).collect();
        let mut order: Vec<u32> = (0..bits.len() as u32).collect();
        order.sort_unstable_by_key(|&i| bits[i as usize]);
        let mut canon = vec![0u32; bits.len()];
        let mut ids = 0u32;
        for (n, &i) in order.iter().enumerate() {
            if n > 0 && bits[order[n - 1] as usize] != bits[i as usize] {
                ids += 1;
            }
            canon[i as usize] = ids;
        }
        let vertex_count = if bits.is_empty() { 0 } else { ids as usize + 1 };
        let vertex_ids: Vec<[u32; 3]> = mesh
            .indices
            .iter()
            .map(|t| t.map(|i| canon[i as usize]))
            .collect();
        // Triangles around each vertex (compressed rows).
        let mut start = vec![0u32; vertex_count + 1];
        for &p in prims {
            for v in vertex_ids[p as usize] {
                start[v as usize + 1] += 1;
            }
        }
        for v in 0..vertex_count {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut around = vec![0u32; start[vertex_count] as usize];
        for &p in prims {
            for v in vertex_ids[p as usize] {
                around[fill[v as usize] as usize] = p;
                fill[v as usize] += 1;
            }
        }
        Adjacency {
            vertex_ids,
            start,
            around,
        }
    }

    /// The vertex ids of triangle `prim`.
    fn tv(&self, prim: u32) -> [u32; 3] {
        self.vertex_ids[prim as usize]
    }

    /// The first triangle (in file order) with the directed edge a -> b.
    fn edge(&self, a: u32, b: u32) -> Option<u32> {
        let (lo, hi) = (
            self.start[a as usize] as usize,
            self.start[a as usize + 1] as usize,
        );
        self.around[lo..hi].iter().copied().find(|&p| {
            let v = self.tv(p);
            (0..3).any(|j| v[j] == a && v[(j + 1) % 3] == b)
        })
    }

    /// The fan form of triangle `p` around vertex `c`: `(j, x0, x1)` with the triangle
    /// `(x0, x1, c)` and `c` its vertex j; `None` when `c` is not a vertex of `p`.
    fn fan(&self, p: u32, c: u32) -> Option<(u8, u32, u32)> {
        let v = self.tv(p);
        let j = (0..3).find(|&j| v[j] == c)?;
        Some((j as u8, v[(j + 1) % 3], v[(j + 2) % 3]))
    }
}

/// Fan triangles `(prim, j)`, with the centre at their vertex j, in fan order.
type FanRun = ([(u32, u8); 4], usize);

/// Up to three fan triangles `(prim, j)` found by a walk around a centre, nearest first.
#[derive(Default)]
struct Walk {
    tris: [(u32, u8); 3],
    len: usize,
}

impl Walk {
    fn tris(&self) -> &[(u32, u8)] {
        &self.tris[..self.len]
    }

    fn contains(&self, p: u32) -> bool {
        self.tris().iter().any(|f| f.0 == p)
    }

    fn push(&mut self, tri: (u32, u8)) {
        self.tris[self.len] = tri;
        self.len += 1;
    }
}

/// The greedy clustering state: which triangles are taken.
struct Clusterer {
    adjacency: Adjacency,
    clustered: Vec<bool>,
    max_per_node: u8,
}

impl Clusterer {
    /// The longest run of unclustered fan triangles through `t` over its three possible
    /// centres (the first of equal ones): a closed fan of four at once, else a window of at
    /// most 3 (or `max_per_node`) triangles of the open fan, as centred on `t` as it fits.
    fn best_run(&self, t: u32) -> FanRun {
        let mut best: FanRun = ([(t, 0); 4], 1);
        let vt = self.adjacency.tv(t);
        let max_open = self.max_per_node.min(3) as usize;
        for jc in 0..3 {
            let c = vt[jc];
            if vt[(jc + 1) % 3] == c || vt[(jc + 2) % 3] == c {
                continue;
            }
            let (_, x0, x1) = self.adjacency.fan(t, c).expect("centre is a vertex");
            let (forward, far) = self.walk_forward(t, c, x1);
            // A closed fan of four: t and three forward triangles, the last ending at x0.
            if self.max_per_node == 4 && forward.len == 3 && far == x0 {
                let [a, b, d] = forward.tris;
                best = ([(t, jc as u8), a, b, d], 4);
                break;
            }
            let back = self.walk_backward(t, c, x0, &forward);
            // The open fan: back (reversed), t, forward; take a window through t.
            let mut run = [(t, jc as u8); 6];
            let mut len = 0;
            for &b in back.tris().iter().rev() {
                run[len] = b;
                len += 1;
            }
            let t_at = len;
            run[len] = (t, jc as u8);
            len += 1;
            for &f in forward.tris() {
                run[len] = f;
                len += 1;
            }
            let take = max_open.min(len);
            if take > best.1 {
                let start = t_at.saturating_sub(take - 1).min(len - take);
                let mut tris = [(t, 0u8); 4];
                tris[..take].copy_from_slice(&run[start..start + take]);
                best = (tris, take);
            }
        }
        best
    }

    /// Up to three unclustered triangles following `t` around centre `c`, starting across
    /// the edge `(x1, c)`: the neighbour across `(x, c)` holds the directed edge `c -> x`.
    /// Returns them with the far vertex of the last.
    fn walk_forward(&self, t: u32, c: u32, x1: u32) -> (Walk, u32) {
        let mut forward = Walk::default();
        let mut far = x1;
        while forward.len < 3 {
            let Some(n) = self.adjacency.edge(c, far) else {
                break;
            };
            if self.clustered[n as usize] || n == t || forward.contains(n) {
                break;
            }
            let Some((j, y0, y1)) = self.adjacency.fan(n, c) else {
                break;
            };
            if y0 != far {
                break;
            }
            forward.push((n, j));
            far = y1;
        }
        (forward, far)
    }

    /// Up to two unclustered triangles preceding `t` around centre `c` (not in `forward`),
    /// starting across the edge `(c, x0)`: the neighbour across `(c, x)` holds the directed
    /// edge `x -> c`. Nearest first.
    fn walk_backward(&self, t: u32, c: u32, x0: u32, forward: &Walk) -> Walk {
        let mut back = Walk::default();
        let mut near = x0;
        while back.len < 2 {
            let Some(n) = self.adjacency.edge(near, c) else {
                break;
            };
            if self.clustered[n as usize] || n == t || back.contains(n) || forward.contains(n) {
                break;
            }
            let Some((j, y0, y1)) = self.adjacency.fan(n, c) else {
                break;
            };
            if y1 != near {
                break;
            }
            back.push((n, j));
            near = y0;
        }
        back
    }

    /// Marks the triangles of `run` clustered and returns them as a cluster, each with the
    /// rotation that puts the centre on V2, which is position 2 of slots 0 and 1 (V0 V1 V2,
    /// V1 V3 V2) and position 0 of slots 2 and 3 (V2 V3 V4, V2 V4 V0).
    fn take(&mut self, (tris, count): FanRun) -> Cluster {
        let mut cluster = Cluster {
            tris: [(0, 0); 4],
            count: count as u8,
        };
        for (k, (&(p, jc), slot)) in tris[..count].iter().zip(&mut cluster.tris).enumerate() {
            self.clustered[p as usize] = true;
            let r = if count == 1 {
                0
            } else {
                let centre_pos = if k < 2 { 2 } else { 0 };
                (centre_pos + 3 - jc as usize) % 3
            };
            *slot = (p, r as u8);
        }
        cluster
    }
}
