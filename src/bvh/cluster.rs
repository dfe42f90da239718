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
    let tvs: Vec<[u32; 3]> = mesh
        .indices
        .iter()
        .map(|t| t.map(|i| canon[i as usize]))
        .collect();
    let tv = |prim: u32| tvs[prim as usize];
    // Triangles around each vertex (compressed rows).
    let mut start = vec![0u32; vertex_count + 1];
    for &p in prims {
        for v in tv(p) {
            start[v as usize + 1] += 1;
        }
    }
    for v in 0..vertex_count {
        start[v + 1] += start[v];
    }
    let mut fill = start.clone();
    let mut around = vec![0u32; start[vertex_count] as usize];
    for &p in prims {
        for v in tv(p) {
            around[fill[v as usize] as usize] = p;
            fill[v as usize] += 1;
        }
    }
    // The first triangle (in file order) with the directed edge a -> b.
    let edge = |a: u32, b: u32| -> Option<u32> {
        let (lo, hi) = (start[a as usize] as usize, start[a as usize + 1] as usize);
        around[lo..hi].iter().copied().find(|&p| {
            let v = tv(p);
            (0..3).any(|j| v[j] == a && v[(j + 1) % 3] == b)
        })
    };
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
                let Some(n) = edge(c, far) else {
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
                let Some(n) = edge(near, c) else {
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
