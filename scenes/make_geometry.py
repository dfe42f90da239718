#!/usr/bin/env python3
"""Writes the OBJ/MTL geometry of the shipped scenes (cornell, bunny room, sky).

Run from this directory: python3 make_geometry.py. Every face is written counter-clockwise
as seen from its front side (the side a given reference point is on, or away from it)."""
import math


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


cornell()
bunny_room()
sky()
