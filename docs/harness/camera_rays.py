"""Writes a scene's full camera ray set (one ray per pixel centre, row order) from the
data set's NAME.json, for the comparisons in README.md and docs/performance.md.

    python3 camera_rays.py ../../../shared/data/scenes/bunny.json bunny_cam.rays

Each ray is 8 x f32 (origin, normalized direction, tmin 0, tmax 1e30), computed in f64 and
rounded once. When NAME_primary.rays sits beside NAME.json, the script checks that every 4th
pixel in x and y equals it bit for bit (the data set's subset) and says so.
"""
import json
import os
import sys

import numpy as np


def main(scene_json, out_path):
    with open(scene_json) as f:
        scene = json.load(f)
    cam, width, height = scene["camera"], scene["width"], scene["height"]
    eye = np.array(cam["eye"], float)
    forward = np.array(cam["target"], float) - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.array(cam["up"], float))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    half = np.tan(np.radians(cam["fov_deg"]) / 2)
    ys, xs = np.mgrid[0:height, 0:width]
    px = ((xs + 0.5) / width * 2 - 1) * half
    py = (1 - (ys + 0.5) / height * 2) * half
    d = forward + px[..., None] * right + py[..., None] * up
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    rays = np.zeros((height, width, 8), np.float32)
    rays[..., 0:3] = eye
    rays[..., 3:6] = d
    rays[..., 7] = 1e30
    tmp = out_path + ".tmp"
    rays.reshape(-1, 8).tofile(tmp)
    os.replace(tmp, out_path)
    primary = scene_json[: -len(".json")] + "_primary.rays"
    if os.path.exists(primary):
        ref = np.fromfile(primary, np.float32).reshape(-1, 8)
        sub = rays[::4, ::4].reshape(-1, 8)
        same = sub.shape == ref.shape and np.array_equal(sub.view(np.uint32), ref.view(np.uint32))
        print(f"{out_path}: {width * height} rays; every 4th pixel "
              f"{'equals' if same else 'DIFFERS FROM'} {primary}")
    else:
        print(f"{out_path}: {width * height} rays")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: camera_rays.py NAME.json OUT.rays")
    main(sys.argv[1], sys.argv[2])
