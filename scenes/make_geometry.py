#!/usr/bin/env python3
"""Writes the OBJ/MTL geometry of the shipped scenes (cornell, bunny room, sky, grove), and
the grove's leaf texture and instance table.

Run from this directory: python3 make_geometry.py. Every face is written counter-clockwise
as seen from its front side (the side a given reference point is on, or away from it)."""
import math
import random
import struct
import zlib


class Obj:
    def __init__(self, mtllib):
        self.lines = [f"# written by scenes/make_geometry.py", f"mtllib {mtllib}"]
        self.nv = 0
        self.nvt = 0
        self.nvn = 0

    def comment(self, text):
        self.lines.append(f"# {text}")

    def usemtl(self, name):
        self.lines.append(f"usemtl {name}")

    def poly(self, pts, facing=None, away=None, uvs=None):
        """A planar polygon; flipped so that its normal points towards `facing` (a point)
        or away from `away`."""
        n = normal(pts)
        c = [sum(p[i] for p in pts) / len(pts) for i in range(3)]
        if facing is not None:
            ref = [facing[i] - c[i] for i in range(3)]
        else:
            ref = [c[i] - away[i] for i in range(3)]
        if dot(n, ref) < 0:
            pts = list(reversed(pts))
            uvs = list(reversed(uvs)) if uvs else None
        first = self.nv + 1
        for p in pts:
            self.lines.append("v {:.4f} {:.4f} {:.4f}".format(*p))
        self.nv += len(pts)
        if uvs:
            t0 = self.nvt + 1
            for t in uvs:
                self.lines.append("vt {:.4f} {:.4f}".format(*t))
            self.nvt += len(uvs)
            self.lines.append("f " + " ".join(f"{first + k}/{t0 + k}" for k in range(len(pts))))
        else:
            self.lines.append("f " + " ".join(str(first + k) for k in range(len(pts))))

    def tri_mesh(self, verts, tris, normals=None):
        first = self.nv + 1
        for p in verts:
            self.lines.append("v {:.5f} {:.5f} {:.5f}".format(*p))
        self.nv += len(verts)
        if normals:
            nfirst = self.nvn + 1
            for n in normals:
                self.lines.append("vn {:.5f} {:.5f} {:.5f}".format(*n))
            self.nvn += len(normals)
            for a, b, c in tris:
                self.lines.append(f"f {a + first}//{a + nfirst} {b + first}//{b + nfirst} {c + first}//{c + nfirst}")
        else:
            for a, b, c in tris:
                self.lines.append(f"f {a + first} {b + first} {c + first}")

    def write(self, path):
        with open(path, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def sub(a, b):
    return [a[i] - b[i] for i in range(3)]


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def dot(a, b):
    return sum(a[i] * b[i] for i in range(3))


def normal(pts):
    # Newell's method
    n = [0.0, 0.0, 0.0]
    for i in range(len(pts)):
        p, q = pts[i], pts[(i + 1) % len(pts)]
        n[0] += (p[1] - q[1]) * (p[2] + q[2])
        n[1] += (p[2] - q[2]) * (p[0] + q[0])
        n[2] += (p[0] - q[0]) * (p[1] + q[1])
    return n


def sphere_normals(center, verts):
    out = []
    for v in verts:
        d = sub(v, center)
        l = math.sqrt(dot(d, d))
        out.append([x / l for x in d])
    return out


def sphere(center, radius, rings, segments):
    """UV sphere, counter-clockwise seen from outside."""
    verts, tris = [], []
    for r in range(rings + 1):
        th = math.pi * r / rings
        for s in range(segments):
            ph = 2 * math.pi * s / segments
            verts.append([center[0] + radius * math.sin(th) * math.cos(ph),
                          center[1] + radius * math.cos(th),
                          center[2] + radius * math.sin(th) * math.sin(ph)])
    idx = lambda r, s: r * segments + s % segments
    for r in range(rings):
        for s in range(segments):
            a, b, c, d = idx(r, s), idx(r, s + 1), idx(r + 1, s), idx(r + 1, s + 1)
            for t in ([a, c, d], [a, d, b]):
                p = [verts[i] for i in t]
                n = cross(sub(p[1], p[0]), sub(p[2], p[0]))
                if dot(n, n) < 1e-12:
                    continue
                cen = [sum(q[i] for q in p) / 3 for i in range(3)]
                if dot(n, sub(cen, center)) < 0:
                    t = [t[0], t[2], t[1]]
                tris.append(t)
    return verts, tris


def box(o, lo, hi, material):
    o.usemtl(material)
    cx = [(lo[i] + hi[i]) / 2 for i in range(3)]
    x0, y0, z0 = lo
    x1, y1, z1 = hi
    faces = [
        [[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0]],
        [[x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]],
        [[x0, y0, z0], [x0, y1, z0], [x0, y1, z1], [x0, y0, z1]],
        [[x1, y0, z0], [x1, y1, z0], [x1, y1, z1], [x1, y0, z1]],
        [[x0, y1, z0], [x1, y1, z0], [x1, y1, z1], [x0, y1, z1]],
        [[x0, y0, z0], [x1, y0, z0], [x1, y0, z1], [x0, y0, z1]],
    ]
    for f in faces:
        o.poly(f, away=cx)


def cornell():
    # The published Cornell box measurements (mm): box about 556 x 548.8 x 559.2, light
    # 130 x 105 just below the ceiling, two blocks.
    o = Obj("cornell.mtl")
    inside = [278.0, 274.4, 279.6]
    o.comment("floor, ceiling, back wall")
    o.usemtl("white")
    o.poly([[552.8, 0, 0], [0, 0, 0], [0, 0, 559.2], [549.6, 0, 559.2]], facing=inside)
    o.poly([[556.0, 548.8, 0], [556.0, 548.8, 559.2], [0, 548.8, 559.2], [0, 548.8, 0]], facing=inside)
    o.poly([[549.6, 0, 559.2], [0, 0, 559.2], [0, 548.8, 559.2], [556.0, 548.8, 559.2]], facing=inside)
    o.comment("right wall (x = 0, green), left wall (x ~ 550, red)")
    o.usemtl("green")
    o.poly([[0, 0, 559.2], [0, 0, 0], [0, 548.8, 0], [0, 548.8, 559.2]], facing=inside)
    o.usemtl("red")
    o.poly([[552.8, 0, 0], [549.6, 0, 559.2], [556.0, 548.8, 559.2], [556.0, 548.8, 0]], facing=inside)
    o.comment("light: 130 x 105 at y = 548.7, emitting downwards")
    o.usemtl("light")
    o.poly([[343.0, 548.7, 227.0], [343.0, 548.7, 332.0], [213.0, 548.7, 332.0], [213.0, 548.7, 227.0]],
           facing=[278.0, 0.0, 279.5])
    o.comment("short block")
    o.usemtl("white")
    c = [185.0, 82.5, 169.0]
    for f in [
        [[130.0, 165.0, 65.0], [82.0, 165.0, 225.0], [240.0, 165.0, 272.0], [290.0, 165.0, 114.0]],
        [[290.0, 0.0, 114.0], [290.0, 165.0, 114.0], [240.0, 165.0, 272.0], [240.0, 0.0, 272.0]],
        [[130.0, 0.0, 65.0], [130.0, 165.0, 65.0], [290.0, 165.0, 114.0], [290.0, 0.0, 114.0]],
        [[82.0, 0.0, 225.0], [82.0, 165.0, 225.0], [130.0, 165.0, 65.0], [130.0, 0.0, 65.0]],
        [[240.0, 0.0, 272.0], [240.0, 165.0, 272.0], [82.0, 165.0, 225.0], [82.0, 0.0, 225.0]],
    ]:
        o.poly(f, away=c)
    o.comment("tall block")
    c = [368.5, 165.0, 351.5]
    for f in [
        [[423.0, 330.0, 247.0], [265.0, 330.0, 296.0], [314.0, 330.0, 456.0], [472.0, 330.0, 406.0]],
        [[423.0, 0.0, 247.0], [423.0, 330.0, 247.0], [472.0, 330.0, 406.0], [472.0, 0.0, 406.0]],
        [[472.0, 0.0, 406.0], [472.0, 330.0, 406.0], [314.0, 330.0, 456.0], [314.0, 0.0, 456.0]],
        [[314.0, 0.0, 456.0], [314.0, 330.0, 456.0], [265.0, 330.0, 296.0], [265.0, 0.0, 296.0]],
        [[265.0, 0.0, 296.0], [265.0, 330.0, 296.0], [423.0, 330.0, 247.0], [423.0, 0.0, 247.0]],
    ]:
        o.poly(f, away=c)
    o.write("cornell/cornell.obj")


def bunny_room():
    # Room around the shared Stanford bunny (its bounding box: x -6.1..3.9, y -1.09..8.8,
    # z -4.0..3.8): a checker floor at y = -1.09, two walls, a ceiling light, a glass sphere.
    o = Obj("room.mtl")
    y0 = -1.0927
    inside = [0.0, 8.0, 0.0]
    o.usemtl("floor")
    o.poly([[-20, y0, -12], [20, y0, -12], [20, y0, 28], [-20, y0, 28]], facing=inside,
           uvs=[[0, 0], [8, 0], [8, 8], [0, 8]])
    o.usemtl("wall")
    o.poly([[-20, y0, -12], [20, y0, -12], [20, 25, -12], [-20, 25, -12]], facing=inside)
    o.usemtl("wall_blue")
    o.poly([[-14, y0, -12], [-14, y0, 28], [-14, 25, 28], [-14, 25, -12]], facing=inside)
    o.usemtl("light")
    o.poly([[-4, 22, -4], [4, 22, -4], [4, 22, 4], [-4, 22, 4]], facing=[0, 0, 0])
    o.usemtl("glass")
    v, t = sphere([5.5, 1.2, 6.5], 2.3, 32, 64)
    o.tri_mesh(v, t, sphere_normals([5.5, 1.2, 6.5], v))
    o.write("bunny/room.obj")


def sky():
    o = Obj("sky.mtl")
    o.usemtl("ground")
    o.poly([[-400, 0, -400], [400, 0, -400], [400, 0, 400], [-400, 0, 400]], facing=[0, 1, 0],
           uvs=[[0, 0], [200, 0], [200, 200], [0, 200]])
    for name, c, r in [("glass", [-2.6, 1.0, 0.0], 1.0), ("gold", [0.0, 1.0, -1.2], 1.0),
                       ("plastic", [2.6, 1.0, 0.0], 1.0)]:
        o.usemtl(name)
        v, t = sphere(c, r, 24, 48)
        o.tri_mesh(v, t, sphere_normals(c, v))
    box(o, [-1.0, 0.0, 1.6], [0.6, 0.8, 3.0], "clay")
    o.write("sky/sky.obj")


GROVE_HEADER = """# A grove under the generated sky: a two-level scene (written by scenes/make_geometry.py).
# Each tree is two instances, its trunk and its canopy of alpha-tested leaf cards (the
# canopy BLAS is non-opaque: map_d in grove.mtl); every fifth tree is mirrored, all are
# scaled non-uniformly. Rocks are rotated about tilted axes; the procedural spheres appear
# twice, once as given and once stretched into ellipsoids.
[camera]
eye = [0.0, 2.2, 12.0]
look_at = [0.0, 2.0, -6.0]
up = [0.0, 1.0, 0.0]
vfov_deg = 50.0

[film]
width = 640
height = 360

[render]
spp = 32
max_depth = 8

[environment]
hdr = "../sky/sky.hdr"
scale = 1.0

[[blas]]
name = "ground"
obj = "ground.obj"

[[blas]]
name = "trunk"
obj = "trunk.obj"

[[blas]]
name = "canopy"
obj = "canopy.obj"
opaque = false

[[blas]]
name = "rock"
obj = "rock.obj"

[[spheres]]
name = "orbs"
mtl = "grove.mtl"
spheres = [
    { center = [-1.6, 0.8, -4.0], radius = 0.8, material = "glass" },
    { center = [0.4, 0.7, -6.5], radius = 0.7, material = "gold" },
    { center = [2.0, 0.5, -3.0], radius = 0.5, material = "paint" },
]

[[instance]]
blas = "ground"
transform = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]

"""


def write_png_rgba(path, width, height, pixels):
    """An 8-bit RGBA PNG; `pixels` is a list of rows of (r, g, b, a)."""
    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    head = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw, 9))
                + chunk(b"IEND", b""))


def leaf_texture(path, size=128, leaves=70, seed=3):
    """Scattered elliptical leaves on a transparent card: alpha 255 inside a leaf, 0 outside."""
    rng = random.Random(seed)
    shapes = []
    for _ in range(leaves):
        cx, cy = rng.uniform(0.12, 0.88) * size, rng.uniform(0.12, 0.88) * size
        a, b = rng.uniform(0.06, 0.11) * size, rng.uniform(0.025, 0.045) * size
        th = rng.uniform(0, math.pi)
        shade = rng.uniform(0.6, 1.0)
        shapes.append((cx, cy, a, b, math.cos(th), math.sin(th), shade))
    rows = []
    for y in range(size):
        row = []
        for x in range(size):
            px = (40, 70, 30, 0)
            for cx, cy, a, b, c, s_, shade in shapes:
                dx, dy = x + 0.5 - cx, y + 0.5 - cy
                u, v = dx * c + dy * s_, -dx * s_ + dy * c
                if (u / a) ** 2 + (v / b) ** 2 <= 1.0:
                    px = (int(70 * shade), int(140 * shade), int(40 * shade), 255)
            row.append(px)
        rows.append(row)
    write_png_rgba(path, size, size, rows)


def cylinder(r0, r1, height, segments):
    """A tapered open cylinder along +y, counter-clockwise seen from outside, with normals."""
    verts, normals, tris = [], [], []
    for k in range(segments):
        ph = 2 * math.pi * k / segments
        c, s = math.cos(ph), math.sin(ph)
        verts += [[r0 * c, 0.0, r0 * s], [r1 * c, height, r1 * s]]
        normals += [[c, 0.0, s], [c, 0.0, s]]
    for k in range(segments):
        a, b = 2 * k, 2 * ((k + 1) % segments)
        tris += [[a, a + 1, b], [b, a + 1, b + 1]]
    return verts, tris, normals


def rock(seed, rings=10, segments=16):
    rng = random.Random(seed)
    verts, tris = sphere([0.0, 0.0, 0.0], 1.0, rings, segments)
    bumps = {}
    out = []
    for v in verts:
        key = tuple(round(x, 4) for x in v)
        if key not in bumps:
            bumps[key] = rng.uniform(0.8, 1.15)
        f = bumps[key]
        out.append([v[0] * f, v[1] * f * 0.7, v[2] * f])
    return out, tris


def fmt(x):
    return f"{x:.6g}"


def matrix(scale, axis, angle, t):
    """Row-major 3x4 [R S | t]: scale, then rotate by `angle` about unit `axis`."""
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    r = [[c + x * x * (1 - c), x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
         [y * x * (1 - c) + z * s, c + y * y * (1 - c), y * z * (1 - c) - x * s],
         [z * x * (1 - c) - y * s, z * y * (1 - c) + x * s, c + z * z * (1 - c)]]
    return [[r[i][j] * scale[j] for j in range(3)] + [t[i]] for i in range(3)]


def instance_entry(blas, m, comment=None, extra=""):
    rows = ", ".join("[" + ", ".join(fmt(v) for v in row) + "]" for row in m)
    head = f"[[instance]]  # {comment}\n" if comment else "[[instance]]\n"
    return head + f'blas = "{blas}"\ntransform = [{rows}]\n{extra}'


def grove():
    """A grove: trees (a trunk BLAS and an alpha-tested canopy BLAS, each instanced per
    tree, some mirrored, all scaled non-uniformly), rocks rotated about tilted axes,
    procedural spheres (one instance of them stretched into ellipsoids), on a ground quad
    under the generated sky."""
    leaf_texture("grove/leaf.png")
    o = Obj("grove.mtl")
    o.usemtl("ground")
    o.poly([[-60, 0, -60], [60, 0, -60], [60, 0, 60], [-60, 0, 60]], facing=[0, 1, 0],
           uvs=[[0, 0], [16, 0], [16, 16], [0, 16]])
    o.write("grove/ground.obj")
    o = Obj("grove.mtl")
    o.usemtl("bark")
    v, t, n = cylinder(0.16, 0.07, 3.2, 12)
    o.tri_mesh(v, t, n)
    o.write("grove/trunk.obj")
    o = Obj("grove.mtl")
    o.usemtl("leaves")
    o.comment("crossed leaf cards around the top of the trunk, textured both sides")
    for k in range(4):
        ph = math.pi * k / 4
        c, s = math.cos(ph), math.sin(ph)
        h = 1.3
        pts = [[-h * c, 2.0, -h * s], [h * c, 2.0, h * s], [h * c, 4.6, h * s], [-h * c, 4.6, -h * s]]
        o.poly(pts, facing=[-s * 10, 3.3, c * 10], uvs=[[0, 0], [1, 0], [1, 1], [0, 1]])
    for y in (2.6, 3.4, 4.1):
        h = 1.1 if y < 4 else 0.8
        o.poly([[-h, y, -h], [h, y, -h], [h, y, h], [-h, y, h]], facing=[0, 10, 0],
               uvs=[[0, 0], [1, 0], [1, 1], [0, 1]])
    o.write("grove/canopy.obj")
    o = Obj("grove.mtl")
    o.usemtl("stone")
    v, t = rock(11)
    o.tri_mesh(v, t)
    o.write("grove/rock.obj")

    rng = random.Random(2024)
    entries = []
    tree = 0
    for i in range(8):
        for j in range(8):
            x = -21 + 6 * i + rng.uniform(-1.5, 1.5)
            z = -40 + 6 * j + rng.uniform(-1.5, 1.5)
            if abs(x) < 3.5 and z > -8:
                continue  # a clearing for the spheres
            sxz, sy = rng.uniform(0.8, 1.3), rng.uniform(0.8, 1.5)
            mirrored = tree % 5 == 2
            scale = [-sxz if mirrored else sxz, sy, sxz * rng.uniform(0.85, 1.15)]
            m = matrix(scale, [0, 1, 0], rng.uniform(0, 2 * math.pi), [x, 0, z])
            note = f"tree {tree}" + (", mirrored" if mirrored else "")
            entries.append(instance_entry("trunk", m, note))
            entries.append(instance_entry("canopy", m))
            tree += 1
    for k in range(14):
        axis = [rng.uniform(-1, 1), 1.0, rng.uniform(-1, 1)]
        l = math.sqrt(dot(axis, axis))
        axis = [a / l for a in axis]
        sc = rng.uniform(0.3, 0.9)
        scale = [sc * rng.uniform(1.0, 1.8), sc, sc * rng.uniform(0.8, 1.3)]
        pos = [rng.uniform(-12, 12), 0.15 * sc, rng.uniform(-24, 4)]
        m = matrix(scale, axis, rng.uniform(0, 2 * math.pi), pos)
        entries.append(instance_entry("rock", m, f"rock {k}, tilted axis"))
    entries.append(instance_entry("orbs", matrix([1, 1, 1], [0, 1, 0], 0.0, [0, 0, 0]),
                                  "the spheres as given"))
    entries.append(instance_entry("orbs", matrix([1.6, 0.6, 1.0], [0, 0, 1], 0.3, [1.0, 0.0, -9.0]),
                                  "the same spheres stretched into ellipsoids, tilted"))
    with open("grove/grove.toml", "w") as f:
        f.write(GROVE_HEADER)
        f.write("\n".join(entries))


cornell()
bunny_room()
sky()
grove()
