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
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A cluster: `count` triangles, slot k holding `(prim, r)`: mesh vertex j of `prim` is
/// stored at node vertex `TRIANGLE_VERTICES[k][(j + r) % 3]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cluster {
    pub tris: [(u32, u8); 4],
    pub count: u8,
}

/// Multiply-xorshift hasher for integer keys (deterministic, fast).
#[derive(Default)]
struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        x ^ (x >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01B3);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.0 = (self.0 ^ i as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(17);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0 ^ i)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(17);
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Clusters the triangles `prims` (finite ones, in file order) into runs of at most
/// `max_per_node` (2 or 4; with 4 an open fan gives at most 3).
pub fn fan_clusters(mesh: &Mesh, prims: &[u32], max_per_node: u8) -> Vec<Cluster> {
    // Vertex ids by exact position bits.
    let mut ids: FastMap<[u32; 3], u32> = FastMap::default();
    ids.reserve(mesh.positions.len());
    let canon: Vec<u32> = mesh
        .positions
        .iter()
        .map(|p| {
            let n = ids.len() as u32;
            *ids.entry(p.map(f32::to_bits)).or_insert(n)
        })
        .collect();
    let tv = |prim: u32| mesh.indices[prim as usize].map(|i| canon[i as usize]);
    let key = |a: u32, b: u32| (a as u64) << 32 | b as u64;
    let mut edges: FastMap<u64, u32> = FastMap::default();
    edges.reserve(3 * prims.len());
    for &p in prims {
        let v = tv(p);
        for j in 0..3 {
            edges.entry(key(v[j], v[(j + 1) % 3])).or_insert(p);
        }
    }
    let mut clustered = vec![false; mesh.len()];
    let mut out = Vec::with_capacity(prims.len() / 2 + 1);
    let max_open = max_per_node.min(3) as usize;
    for &t in prims {
        if clustered[t as usize] {
            continue;
        }
        // Best run: (triangles with their centre index j_c), at most 4.
        let mut best: ([(u32, u8); 4], usize) = ([(t, 0); 4], 1);
        let vt = tv(t);
        for jc in 0..3 {
            let c = vt[jc];
            if vt[(jc + 1) % 3] == c || vt[(jc + 2) % 3] == c {
                continue;
            }
            // Fan form of a triangle around c: (x0, x1) with the triangle = (x0, x1, c).
            let fan = |p: u32| -> Option<(u8, u32, u32)> {
                let v = tv(p);
                let j = (0..3).find(|&j| v[j] == c)?;
                Some((j as u8, v[(j + 1) % 3], v[(j + 2) % 3]))
            };
            let (_, x0, x1) = fan(t).expect("centre is a vertex");
            let mut run = [(t, jc as u8); 7];
            let mut len = 1;
            let mut start = 0;
            // Forward: the neighbour across (x1, c) holds the directed edge c -> x1.
            let mut far = x1;
            let mut forward = [(0u32, 0u8); 3];
            let mut nf = 0;
            while nf < 3 {
                let Some(&n) = edges.get(&key(c, far)) else {
                    break;
                };
                if clustered[n as usize] || n == t || forward[..nf].iter().any(|f| f.0 == n) {
                    break;
                }
                let Some((j, y0, y1)) = fan(n) else { break };
                if y0 != far {
                    break;
                }
                forward[nf] = (n, j);
                nf += 1;
                far = y1;
            }
            // A closed fan of four: t and three forward triangles, the last ending at x0.
            if max_per_node == 4 && nf == 3 && far == x0 {
                best = ([run[0], forward[0], forward[1], forward[2]], 4);
                break;
            }
            // Backward: the neighbour across (c, x0) holds the directed edge x0 -> c.
            let mut back = [(0u32, 0u8); 3];
            let mut nb = 0;
            let mut near = x0;
            while nb < 2 {
                let Some(&n) = edges.get(&key(near, c)) else {
                    break;
                };
                if clustered[n as usize]
                    || n == t
                    || back[..nb].iter().any(|f| f.0 == n)
                    || forward[..nf].iter().any(|f| f.0 == n)
                {
                    break;
                }
                let Some((j, y0, y1)) = fan(n) else { break };
                if y1 != near {
                    break;
                }
                back[nb] = (n, j);
                nb += 1;
                near = y0;
            }
            // Lay out back (reversed), t, forward; take a window through t.
            for i in (0..nb).rev() {
                run[len] = back[i];
                len += 1;
            }
            let t_at = len;
            run[len] = (t, jc as u8);
            len += 1;
            for f in &forward[..nf] {
                run[len] = *f;
                len += 1;
            }
            run.copy_within(1..len, 0);
            len -= 1;
            let t_at = t_at - 1;
            let take = max_open.min(len);
            if take > best.1 {
                start = t_at.saturating_sub(take - 1).min(len - take);
                let mut tris = [(t, 0u8); 4];
                tris[..take].copy_from_slice(&run[start..start + take]);
                best = (tris, take);
            }
            let _ = start;
        }
        // Slot rotations: the centre sits at node vertex V2, which is position 2 of slots 0
        // and 1 (V0 V1 V2, V1 V3 V2) and position 0 of slots 2 and 3 (V2 V3 V4, V2 V4 V0).
        let mut cluster = Cluster {
            tris: [(0, 0); 4],
            count: best.1 as u8,
        };
        for k in 0..best.1 {
            let (p, jc) = best.0[k];
            clustered[p as usize] = true;
            let r = if best.1 == 1 {
                0
            } else {
                let centre_pos = if k < 2 { 2 } else { 0 };
                (centre_pos + 3 - jc as usize) % 3
            };
            cluster.tris[k] = (p, r as u8);
        }
        out.push(cluster);
    }
    out
}
