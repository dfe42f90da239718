//! Rendering two-level scenes: an identity instance renders the flat mesh's image; the
//! whole Cornell box moved, turned, scaled or mirrored by its instance (and the camera with
//! it) renders the same image, mirrored where the instance mirrors; the shipped grove
//! renders with its alpha-tested canopy, spheres and mirrored instances.

mod common;

use common::repo_path;
use glam::{Affine3A, Mat3, Quat, Vec3};
use wavetrace::render::{build_wave_tracer, render, Control, Image, RenderOptions};
use wavetrace::scene::Scene;
use wavetrace::traverse::WaveTracerConfig;

const SIZE: u32 = 48;

/// The Cornell box scene file, small, with `body` in place of its `[[mesh]]` entry and the
/// camera moved by `camera`.
fn cornell(body: &str, camera: Affine3A) -> Scene {
    let eye = camera.transform_point3(Vec3::new(278.0, 273.0, -800.0));
    let look = camera.transform_point3(Vec3::new(278.0, 273.0, 0.0));
    let up = camera.transform_vector3(Vec3::Y).normalize();
    let v = |p: Vec3| format!("[{}, {}, {}]", p.x, p.y, p.z);
    let text = format!(
        "[camera]\neye = {}\nlook_at = {}\nup = {}\nvfov_deg = 39.3\n\n\
         [film]\nwidth = {SIZE}\nheight = {SIZE}\n\n[render]\nspp = 16\nmax_depth = 6\n\n\
         {body}\n\n[environment]\nradiance = [0.0, 0.0, 0.0]\n",
        v(eye),
        v(look),
        v(up)
    );
    Scene::from_toml_str(&text, repo_path("scenes/cornell/instanced.toml")).expect("scene")
}

/// `[[blas]]` of the box and one `[[instance]]` of it with matrix `m`.
fn instanced(m: Affine3A) -> String {
    let a = m.matrix3;
    let t = m.translation;
    let row = |r: usize| {
        format!(
            "[{}, {}, {}, {}]",
            a.x_axis[r], a.y_axis[r], a.z_axis[r], t[r]
        )
    };
    format!(
        "[[blas]]\nname = \"box\"\nobj = \"cornell.obj\"\n\n[[instance]]\nblas = \"box\"\n\
         transform = [{}, {}, {}]\n",
        row(0),
        row(1),
        row(2)
    )
}

fn render_scene(scene: &Scene, spp: u32) -> Image {
    let (tracer, _) = build_wave_tracer(scene, WaveTracerConfig::default()).expect("tracer");
    let opts = RenderOptions {
        spp,
        seed: 5,
        ..RenderOptions::for_scene(scene)
    };
    render(scene, &tracer, &opts, Control::default())
        .expect("render")
        .image
}

/// The image averaged over blocks of `BLOCK` x `BLOCK` pixels (the noise of a block is
/// `BLOCK` times smaller than a pixel's).
const BLOCK: u32 = 6;

fn blocks(a: &Image) -> Vec<Vec3> {
    let n = SIZE / BLOCK;
    (0..n * n)
        .map(|b| {
            let (bx, by) = (b % n * BLOCK, b / n * BLOCK);
            let mut sum = Vec3::ZERO;
            for y in by..by + BLOCK {
                for x in bx..bx + BLOCK {
                    sum += a.at(x, y);
                }
            }
            sum / (BLOCK * BLOCK) as f32
        })
        .collect()
}

/// Root mean square difference of the block averages over blocks and channels, and the
/// mean level.
fn rmse_and_mean(a: &Image, b: &Image) -> (f64, f64) {
    let (a, b) = (blocks(a), blocks(b));
    let mut se = 0.0f64;
    let mut sum = 0.0f64;
    for (p, q) in a.iter().zip(&b) {
        se += (*p - *q).length_squared() as f64;
        sum += p.element_sum() as f64;
    }
    let n = (a.len() * 3) as f64;
    ((se / n).sqrt(), sum / n)
}

#[test]
fn an_identity_instance_renders_the_flat_image() {
    let flat = cornell("[[mesh]]\nobj = \"cornell.obj\"\n", Affine3A::IDENTITY);
    let inst = cornell(&instanced(Affine3A::IDENTITY), Affine3A::IDENTITY);
    assert!(!flat.is_instanced() && inst.is_instanced());
    let a = render_scene(&flat, 4);
    let b = render_scene(&inst, 4);
    // The identity transform is exact, so every hit, light sample and path is the same.
    let same = a
        .pixels
        .iter()
        .zip(&b.pixels)
        .filter(|(p, q)| (**p - **q).abs().max_element() <= 1e-5 * p.max_element().max(1.0))
        .count();
    assert!(
        same as f64 >= 0.999 * a.pixels.len() as f64,
        "{same} of {} pixels agree",
        a.pixels.len()
    );
    assert!(a.mean().max_element() > 0.0);
}

/// Moving the box and the camera together changes nothing in expectation: the same light
/// reaches the same pixels. A uniform scale keeps radiance too (area and distance squared
/// scale alike). The images differ only by noise (other paths: hit points differ by
/// rounding). The translation stays small beside the scaled box: the renderer's
/// self-intersection offset grows with the distance from the origin, and the box's light
/// hangs 0.1 mm (here 1e-3 units) below its ceiling.
#[test]
fn a_moved_turned_scaled_box_renders_the_same_image() {
    let flat = cornell("[[mesh]]\nobj = \"cornell.obj\"\n", Affine3A::IDENTITY);
    let reference = render_scene(&flat, 48);
    let m = Affine3A::from_scale_rotation_translation(
        Vec3::splat(0.01),
        Quat::from_axis_angle(Vec3::new(1.0, 2.0, -0.5).normalize(), 0.9),
        Vec3::new(-1.0, 2.0, 3.0),
    );
    let moved = cornell(&instanced(m), m);
    let image = render_scene(&moved, 48);
    let (rmse, mean) = rmse_and_mean(&reference, &image);
    assert!(mean > 0.05, "mean {mean}");
    assert!(rmse < 0.1 * mean, "rmse {rmse} against mean {mean}");
    let (ma, mb) = (reference.mean(), image.mean());
    assert!(
        (ma - mb).abs().max_element() < 0.02 * ma.max_element(),
        "means {ma} {mb}"
    );
}

/// A mirroring instance (and the camera mirrored with it, keeping its handedness by the
/// image) renders the mirror image: the red and green walls swap sides. Winding, facing of
/// the light and shading normals all go through the mirrored matrix.
#[test]
fn a_mirrored_box_renders_the_mirror_image() {
    let flat = cornell("[[mesh]]\nobj = \"cornell.obj\"\n", Affine3A::IDENTITY);
    let reference = render_scene(&flat, 48);
    // Mirror x about the box's middle plane x = 278: the camera (on that plane, looking
    // along z) stays where it is, and the image is the reference flipped left to right.
    let m = Affine3A::from_mat3_translation(
        Mat3::from_diagonal(Vec3::new(-1.0, 1.0, 1.0)),
        Vec3::new(556.0, 0.0, 0.0),
    );
    let mirrored = cornell(&instanced(m), Affine3A::IDENTITY);
    let image = render_scene(&mirrored, 48);
    let flipped = Image {
        width: SIZE,
        height: SIZE,
        pixels: (0..SIZE * SIZE)
            .map(|i| image.at(SIZE - 1 - i % SIZE, i / SIZE))
            .collect(),
    };
    let (rmse, mean) = rmse_and_mean(&reference, &flipped);
    assert!(rmse < 0.1 * mean, "rmse {rmse} against mean {mean}");
    // Unflipped, the walls are on the wrong sides: the difference is far above the noise.
    let (rmse_unflipped, _) = rmse_and_mean(&reference, &image);
    assert!(
        rmse_unflipped > 2.0 * rmse,
        "flipped {rmse}, unflipped {rmse_unflipped}"
    );
}

/// The shipped grove loads as a two-level scene with mirrored instances, an alpha-tested
/// canopy and procedural spheres, and renders: the alpha test runs (any-hit invocations
/// on camera rays) and lets rays through (the sky shows through the canopy's cards).
#[test]
fn the_grove_renders_through_its_alpha_tested_canopy() {
    let path = repo_path("scenes/grove/grove.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("width = 640", "width = 160")
        .replace("height = 360", "height = 90");
    let scene = Scene::from_toml_str(&text, &path).expect("grove");
    assert!(scene.is_instanced());
    assert!(scene.instances.len() >= 100);
    assert!(scene.instances.iter().any(|i| i.is_mirrored()));
    assert!(scene.blases.iter().any(|b| !b.opaque));
    let (tracer, build) = build_wave_tracer(&scene, WaveTracerConfig::default()).unwrap();
    assert_eq!(build.instances, scene.instances.len());
    let opts = RenderOptions {
        spp: 1,
        ..RenderOptions::for_scene(&scene)
    };
    let out = render(&scene, &tracer, &opts, Control::default()).unwrap();
    let camera = &out.stats.camera.counters;
    assert!(camera.shader.any_hit_invocations > 0);
    assert!(camera.shader.instance_transitions > 0);
    assert!(camera.shader.intersection_invocations > 0);
    // Candidates on the canopy outnumber accepted hits there: some were ignored.
    assert!(camera.shader.candidate_hits > 0);
    assert!(out.image.mean().min_element() > 0.0);
}
