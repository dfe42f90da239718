//! `wavetrace rays SCENE_OR_MESH --kind primary|diffuse|shadow|ao -o FILE`: the ray sets
//! `profile` makes, written as a ray file for `trace` and `bench`.

use std::path::PathBuf;
use wavetrace::outfile::write_bytes_atomic;
use wavetrace::profile::{self, QueryKind, RayKind};
use wavetrace::traverse::rayfile::encode_rays;
use wavetrace::{Error, Result};

#[derive(clap::Args)]
pub struct RaysArgs {
    /// Scene file (.toml, camera from the scene) or mesh (.obj, .obj.gz, .ply, .gltf or .glb).
    pub input: PathBuf,
    /// Ray set: primary (alias camera): one ray per pixel; diffuse: a cosine bounce from
    /// each camera hit; shadow: from each camera hit to a point light above the scene; ao:
    /// ambient-occlusion rays of a tenth of the scene diagonal. Shadow and ao rays are
    /// any-hit rays in `profile`; `trace` traces every ray file for its closest hit.
    #[arg(long, default_value = "primary")]
    pub kind: String,
    /// Ray file to write: little-endian, 8 x f32 per ray (origin xyz, dir xyz, tmin, tmax).
    #[arg(short, long)]
    pub out: PathBuf,
    /// Image size of the camera rays, WxH (as profile's).
    #[arg(long, default_value = "256x256")]
    pub size: String,
    /// Camera for a bare mesh: ex,ey,ez,tx,ty,tz,vfov_deg (default: framing the mesh).
    #[arg(long)]
    pub camera: Option<String>,
    /// (The secondary rays' directions, as profile's.)
    #[command(flatten)]
    pub seed: super::flags::SeedArg,
}

pub fn run(args: RaysArgs) -> Result<i32> {
    let name = if args.kind == "camera" {
        "primary"
    } else {
        args.kind.as_str()
    };
    let kind = RayKind::from_name(name).ok_or_else(|| {
        Error::field(
            "--kind",
            format!(
                "`{}`: use primary (or camera), diffuse, shadow or ao",
                args.kind
            ),
        )
    })?;
    let (width, height) = super::profile::parse_size(&args.size)?;
    let camera = args
        .camera
        .as_deref()
        .map(super::profile::parse_camera)
        .transpose()?;
    let is_scene = args
        .input
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let (mesh, _, primary) =
        super::profile::camera_rays(&args.input, is_scene, (width, height), camera.as_ref())?;
    // The same set profile traces: secondary rays leave the reference hits of the camera
    // rays on the (flattened) triangles.
    let image = profile::reference_image(&mesh)?;
    let (set, _) = profile::make_rays(kind, &mesh, &image, primary, args.seed.seed);
    write_bytes_atomic(&args.out, &encode_rays(&set.rays))?;
    eprintln!(
        "{}: {} {} rays ({}) from {}",
        args.out.display(),
        set.rays.len(),
        kind.name(),
        match set.query {
            QueryKind::ClosestHit => "closest hit",
            QueryKind::AnyHit => "any hit in profile",
        },
        args.input.display()
    );
    Ok(0)
}
