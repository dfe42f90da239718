//! `wavetrace bvh MESH_OR_SCENE`: build a BVH image, print build time, quality metrics and
//! the validator's verdict (exit 1 if invalid); optionally dump the image. A scene file
//! (.toml) builds a two-level image and reports each level.

use clap::ValueEnum;
use std::path::PathBuf;
use std::time::Instant;
use wavetrace::bvh::two_level::{validate_two_level, BlasKind, TwoLevelOptions};
use wavetrace::bvh::{self, BoxFormat, BuildOptions, NodeOrder};
use wavetrace::hw::TriangleReturnMode;
use wavetrace::outfile::OutputSet;
use wavetrace::Result;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BoxArg {
    Fp32,
    Fp16,
    Mixed,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OrderArg {
    Dfs,
    Bfs,
    /// Treelets of 2 KB laid out level by level, in depth-first order.
    Treelets,
}

/// `--tris-per-node`: 1, 2 or 4 (the triangle node holds at most four, and packs of three
/// are not made).
fn parse_tris_per_node(s: &str) -> std::result::Result<u8, String> {
    match s {
        "1" => Ok(1),
        "2" => Ok(2),
        "4" => Ok(4),
        _ => Err(format!("{s:?}: triangles per node are 1, 2 or 4")),
    }
}

/// Build options, shared by the commands that build a BVH (defaults: `BuildOptions`'s).
#[derive(clap::Args, Clone, Debug)]
pub struct BuildArgs {
    /// Box node format.
    #[arg(long = "box", value_enum, default_value = "mixed")]
    pub box_format: BoxArg,
    /// Mixed boxes: the largest relative growth of the child boxes' area for FP16.
    #[arg(long, default_value_t = 0.05)]
    pub max_area_growth: f32,
    /// Most triangles per triangle node: 1, 2 or 4.
    #[arg(long, default_value_t = 2, value_parser = parse_tris_per_node)]
    pub tris_per_node: u8,
    /// Triangle return mode: 0 (ids) or 1 (barycentrics).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub mode: u8,
    /// Node order in memory.
    #[arg(long, value_enum, default_value = "dfs")]
    pub order: OrderArg,
    /// Split the references of large triangles.
    #[arg(long)]
    pub splits: bool,
    /// Leaf chains: fan clusters in one triangle node behind one box slot (type k = triangles
    /// k..0, as the driver's pair compression); needs --tris-per-node 2 or 4.
    #[arg(long)]
    pub chains: bool,
    /// Descriptor box growth in ULPs: each box test's far distance is scaled by 1 + G*2^-24.
    /// 0 is the Xbox DXR runtime's value; then a ray that meets a mesh exactly on an edge
    /// lying on a box face can slip between two boxes. 3 or more closes that (GPURT uses 6).
    #[arg(long, default_value_t = 0)]
    pub grow: u8,
    /// Optimize the tree after the top-down build: subtrees are moved to where they add the
    /// least surface area (insertion-based, as Bittner et al. 2013). 2-4x the build time;
    /// fewer TD clocks on scenes of mixed triangle sizes (sponza's camera rays: -25 %).
    #[arg(long)]
    pub optimize: bool,
}

impl BuildArgs {
    pub fn options(&self) -> BuildOptions {
        BuildOptions {
            box_format: match self.box_format {
                BoxArg::Fp32 => BoxFormat::Fp32,
                BoxArg::Fp16 => BoxFormat::Fp16,
                BoxArg::Mixed => BoxFormat::Mixed {
                    max_area_growth: self.max_area_growth,
                },
            },
            triangles_per_node: self.tris_per_node,
            return_mode: TriangleReturnMode::from_bit(self.mode as u32),
            node_order: match self.order {
                OrderArg::Dfs => NodeOrder::DepthFirst,
                OrderArg::Bfs => NodeOrder::BreadthFirst,
                OrderArg::Treelets => NodeOrder::Treelets,
            },
            spatial_splits: self.splits,
            box_grow_ulps: self.grow,
            box_sort: true,
            leaf_chains: self.chains,
            optimize: self.optimize,
        }
    }
}

#[derive(clap::Args)]
pub struct BvhArgs {
    /// Mesh to build (.obj, .obj.gz, .ply, .gltf or .glb; glTF flattened to world space),
    /// or scene file (.toml: a two-level image, TLAS over instances of BLASes, each level
    /// reported).
    #[arg(value_name = "MESH_OR_SCENE")]
    pub mesh: PathBuf,
    #[command(flatten)]
    pub build: BuildArgs,
    #[command(flatten)]
    pub threads: super::flags::ThreadsArg,
    /// Write the image bytes here (via a temporary file, then renamed). `--dump` is the
    /// same flag.
    #[arg(short = 'o', long = "out", visible_alias = "dump", value_name = "FILE")]
    pub dump: Option<PathBuf>,
    /// The report (the build's options, timings, metrics and the validator's verdict) as
    /// one JSON object.
    #[command(flatten)]
    pub json: super::flags::JsonArg,
    /// Build this many times in this process and report the first, best and median build +
    /// encode time (the first build faults in all of its memory fresh; later ones reuse
    /// whatever memory the allocator kept). The image and metrics are the first build's.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Scene files: open large instances one level into their BLAS (one TLAS leaf per
    /// child of the BLAS root, GPURT's rebraid).
    #[arg(long)]
    pub rebraid: bool,
}

pub fn run(args: BvhArgs) -> Result<i32> {
    if super::input::is_scene(&args.mesh) {
        return run_scene(&args);
    }
    if args.rebraid {
        return Err(wavetrace::Error::field(
            "--rebraid",
            "applies to scene files (.toml) only",
        ));
    }
    let options = args.build.options();
    let pool = args.threads.pool()?;
    let mut outputs = OutputSet::new();
    let dump_id = (args.dump.as_deref())
        .map(|p| outputs.file("--out (--dump)", p))
        .transpose()?;
    let json_id = args.json.register(&mut outputs)?;

    let start = Instant::now();
    let mesh = super::input::load_mesh(&args.mesh)?;
    let load_seconds = start.elapsed().as_secs_f64();
    let cpu_before = process_cpu_seconds();
    super::interrupt::check(&outputs)?;
    let built = pool.install(|| bvh::build(&mesh, &options))?;
    super::interrupt::check(&outputs)?;
    // CPU time of build + encode, all threads (Linux only): on a busy machine it shows the
    // work done better than the wall clock does.
    let build_cpu_seconds = cpu_before.zip(process_cpu_seconds()).map(|(a, b)| b - a);
    // Build + encode seconds of every build, the first one first.
    let mut repeats = vec![built.build_seconds + built.encode_seconds];
    for _ in 1..args.repeat {
        let again = pool.install(|| bvh::build(&mesh, &options))?;
        super::interrupt::check(&outputs)?;
        repeats.push(again.build_seconds + again.encode_seconds);
    }
    let (first, best, median) = super::first_best_median(&repeats);
    let start = Instant::now();
    let errors = bvh::validate(&built.image, &mesh);
    let validate_seconds = start.elapsed().as_secs_f64();

    if let Some(id) = dump_id {
        outputs.write_bytes(id, &built.image.bytes)?;
    }
    super::interrupt::check(&outputs)?;

    let m = &built.metrics;
    if let Some(id) = json_id {
        let value = serde_json::json!({
            "mesh": args.mesh.display().to_string(),
            "threads": pool.current_num_threads(),
            "options": options.to_string(),
            "load_seconds": load_seconds,
            "build_seconds": built.build_seconds,
            "encode_seconds": built.encode_seconds,
            "validate_seconds": validate_seconds,
            "build_encode_cpu_seconds": build_cpu_seconds,
            "repeat_build_encode_seconds": repeats,
            "dropped_nan_triangles": built.dropped_nan_triangles,
            "references": built.references,
            "root": built.image.root.to_u32(),
            "descriptor": built.image.descriptor.to_dwords(),
            "metrics": m,
            "valid": errors.is_empty(),
            "errors": errors.iter().take(100).map(|e| e.to_string()).collect::<Vec<_>>(),
        });
        outputs.write_bytes(id, format!("{value}\n").as_bytes())?;
    }
    say!("mesh                {}", args.mesh.display());
    say!("triangles           {}", m.triangles);
    if built.dropped_nan_triangles > 0 {
        say!(
            "warning             {} triangles with NaN/infinite vertices dropped",
            built.dropped_nan_triangles
        );
    }
    say!("references          {}", built.references);
    say!("threads             {}", pool.current_num_threads());
    say!("options             {options}");
    say!("load (parse) s      {load_seconds:.3}");
    say!("build s             {:.3}", built.build_seconds);
    say!("encode s            {:.3}", built.encode_seconds);
    if let Some(cpu) = build_cpu_seconds {
        say!("build+encode CPU s  {cpu:.3} (all threads)");
    }
    if repeats.len() > 1 {
        say!(
            "build+encode s      first {first:.3}, best {best:.3}, median {median:.3} of {} in this process",
            repeats.len()
        );
    }
    say!("validate s          {validate_seconds:.3}");
    say!(
        "SAH cost            {:.3} (C_box = 1, C_tri = 1)",
        m.sah_cost
    );
    say!(
        "nodes               {} box16, {} box32, {} triangle",
        m.box16_nodes,
        m.box32_nodes,
        m.triangle_nodes
    );
    say!(
        "bytes               {} ({:.2} per triangle)",
        m.bytes,
        m.bytes_per_triangle
    );
    say!(
        "tris per tri node   1: {}, 2: {}, 3: {}, 4: {} (mean {:.2})",
        m.triangles_per_node_histogram[1],
        m.triangles_per_node_histogram[2],
        m.triangles_per_node_histogram[3],
        m.triangles_per_node_histogram[4],
        m.triangles_per_triangle_node()
    );
    say!("max depth           {}", m.max_depth);
    say!("box fill rate       {:.3}", m.fill_rate);
    print_verdict(&errors);
    outputs.commit()?;
    Ok(if errors.is_empty() { 0 } else { 1 })
}

/// The validator's verdict line, and its first 20 errors.
fn print_verdict(errors: &[impl std::fmt::Display]) {
    if errors.is_empty() {
        say!("validator           valid");
    } else {
        say!("validator           INVALID ({} errors)", errors.len());
        for e in errors.iter().take(20) {
            say!("  {e}");
        }
    }
}

/// One BLAS of a two-level image, as `bvh` reports it.
#[derive(serde::Serialize)]
struct BlasReport {
    name: String,
    kind: &'static str,
    opaque: bool,
    primitives: usize,
    box_nodes: usize,
    max_depth: usize,
    bytes: u64,
    /// Instances that use it.
    instances: usize,
    /// The triangle BLAS's SAH cost, built alone (absent for spheres).
    #[serde(skip_serializing_if = "Option::is_none")]
    sah_cost: Option<f64>,
    dropped_nan_triangles: usize,
}

/// `bvh SCENE.toml`: the two-level build, each level, the validator.
fn run_scene(args: &BvhArgs) -> Result<i32> {
    let options = TwoLevelOptions {
        blas: args.build.options(),
        rebraid: args.rebraid,
    };
    let pool = args.threads.pool()?;
    let mut outputs = OutputSet::new();
    let dump_id = (args.dump.as_deref())
        .map(|p| outputs.file("--out (--dump)", p))
        .transpose()?;
    let json_id = args.json.register(&mut outputs)?;
    let start = Instant::now();
    let scene = super::input::load_scene(&args.mesh)?;
    let load_seconds = start.elapsed().as_secs_f64();
    super::interrupt::check(&outputs)?;
    let (built, _) = pool.install(|| scene.build(&options))?;
    super::interrupt::check(&outputs)?;
    let mut repeats = vec![built.build_seconds + built.encode_seconds];
    for _ in 1..args.repeat {
        let (again, _) = pool.install(|| scene.build(&options))?;
        super::interrupt::check(&outputs)?;
        repeats.push(again.build_seconds + again.encode_seconds);
    }
    let (first, best, median) = super::first_best_median(&repeats);
    let start = Instant::now();
    let errors = validate_two_level(&built, &scene.input);
    let validate_seconds = start.elapsed().as_secs_f64();
    if let Some(id) = dump_id {
        outputs.write_bytes(id, &built.image.bytes)?;
    }
    super::interrupt::check(&outputs)?;
    let input = &scene.input;
    let blases: Vec<BlasReport> = built
        .blases
        .iter()
        .enumerate()
        .map(|(i, b)| BlasReport {
            name: scene
                .scene
                .blases
                .get(i)
                .map_or_else(|| "mesh".to_string(), |s| s.name.clone()),
            kind: match b.kind {
                BlasKind::Triangles => "triangles",
                BlasKind::Spheres => "spheres",
            },
            opaque: b.opaque,
            primitives: b.primitives,
            box_nodes: b.box_nodes,
            max_depth: b.max_depth,
            bytes: 64 * b.blocks,
            instances: input
                .instances
                .iter()
                .filter(|n| n.blas as usize == i)
                .count(),
            sah_cost: b.metrics.as_ref().map(|m| m.sah_cost),
            dropped_nan_triangles: b.dropped_nan_triangles,
        })
        .collect();
    let t = &built.tlas;
    let image_bytes = built.image.bytes.len();
    if let Some(id) = json_id {
        let value = serde_json::json!({
            "scene": args.mesh.display().to_string(),
            "threads": pool.current_num_threads(),
            "options": options.blas.to_string(),
            "rebraid": options.rebraid,
            "load_seconds": load_seconds,
            "build_seconds": built.build_seconds,
            "encode_seconds": built.encode_seconds,
            "validate_seconds": validate_seconds,
            "repeat_build_encode_seconds": repeats,
            "image_bytes": image_bytes,
            "root": built.image.root.to_u32(),
            "descriptor": built.image.descriptor.to_dwords(),
            "tlas": {
                "instances": input.instances.len(),
                "instance_nodes": t.instance_nodes,
                "box_nodes": t.box_nodes,
                "blocks": t.blocks,
                "bytes": 64 * t.blocks,
                "rebraided_instances": t.rebraided_instances,
                "max_depth": t.max_depth,
                "sah_cost": t.sah_cost,
            },
            "blases": blases,
            "valid": errors.is_empty(),
            "errors": errors.iter().take(100).map(|e| e.to_string()).collect::<Vec<_>>(),
        });
        outputs.write_bytes(id, format!("{value}\n").as_bytes())?;
    }
    say!("scene               {}", args.mesh.display());
    say!("threads             {}", pool.current_num_threads());
    say!("options             {}", options.blas);
    say!(
        "rebraid             {}",
        if options.rebraid { "on" } else { "off" }
    );
    say!("load (parse) s      {load_seconds:.3}");
    say!("build s             {:.3}", built.build_seconds);
    say!("encode s            {:.3}", built.encode_seconds);
    if repeats.len() > 1 {
        say!(
            "build+encode s      first {first:.3}, best {best:.3}, median {median:.3} of {} in this process",
            repeats.len()
        );
    }
    say!("validate s          {validate_seconds:.3}");
    say!("image bytes         {image_bytes}");
    say!("TLAS");
    say!("instances           {}", input.instances.len());
    say!(
        "instance nodes      {} ({} instances rebraided)",
        t.instance_nodes,
        t.rebraided_instances
    );
    say!("box nodes           {}", t.box_nodes);
    say!("blocks / bytes      {} / {}", t.blocks, 64 * t.blocks);
    say!("max depth           {}", t.max_depth);
    say!(
        "SAH cost            {:.3} (C_box = 1, C_leaf = 1)",
        t.sah_cost
    );
    say!("BLASes              {}", blases.len());
    say!(
        "  {:>3} {:<16} {:<9} {:>6} {:>10} {:>9} {:>5} {:>10} {:>9}",
        "#",
        "name",
        "kind",
        "opaque",
        "primitives",
        "box nodes",
        "depth",
        "bytes",
        "instances"
    );
    for (i, b) in blases.iter().enumerate() {
        say!(
            "  {:>3} {:<16} {:<9} {:>6} {:>10} {:>9} {:>5} {:>10} {:>9}",
            i,
            b.name,
            b.kind,
            if b.opaque { "yes" } else { "no" },
            b.primitives,
            b.box_nodes,
            b.max_depth,
            b.bytes,
            b.instances
        );
        if b.dropped_nan_triangles > 0 {
            say!(
                "      warning: {} triangles with NaN/infinite vertices dropped",
                b.dropped_nan_triangles
            );
        }
    }
    print_verdict(&errors);
    outputs.commit()?;
    Ok(if errors.is_empty() { 0 } else { 1 })
}

/// User + system CPU time of this process so far, from `/proc/self/stat` (Linux), assuming
/// the usual 100 clock ticks per second.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
