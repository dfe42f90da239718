//! `wavetrace bvh MESH`: build a BVH image, print build time, quality metrics and the
//! validator's verdict (exit 1 if invalid); optionally dump the image.

use clap::ValueEnum;
use std::path::PathBuf;
use std::time::Instant;
use wavetrace::bvh::{self, BoxFormat, BuildOptions, Mesh, NodeOrder};
use wavetrace::hw::TriangleReturnMode;
use wavetrace::outfile::write_bytes_atomic;
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
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=4))]
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
    /// Mesh to build (.obj or .obj.gz).
    pub mesh: PathBuf,
    #[command(flatten)]
    pub build: BuildArgs,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Write the image bytes here (via a temporary file, then renamed).
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Build this many times in this process and report the first, best and median build +
    /// encode time (the first build faults in all of its memory fresh; later ones reuse
    /// whatever memory the allocator kept). The image and metrics are the first build's.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
}

pub fn run(args: BvhArgs) -> Result<i32> {
    let options = args.build.options();
    let pool = super::thread_pool(args.threads)?;

    let start = Instant::now();
    let mesh = Mesh::load_obj(&args.mesh)?;
    let load_seconds = start.elapsed().as_secs_f64();
    let cpu_before = process_cpu_seconds();
    let built = pool.install(|| bvh::build(&mesh, &options))?;
    // CPU time of build + encode, all threads (Linux only): on a busy machine it shows the
    // work done better than the wall clock does.
    let build_cpu_seconds = cpu_before.zip(process_cpu_seconds()).map(|(a, b)| b - a);
    // Build + encode seconds of every build, the first one first.
    let mut repeats = vec![built.build_seconds + built.encode_seconds];
    for _ in 1..args.repeat {
        let again = pool.install(|| bvh::build(&mesh, &options))?;
        repeats.push(again.build_seconds + again.encode_seconds);
    }
    let (first, best, median) = super::first_best_median(&repeats);
    let start = Instant::now();
    let errors = bvh::validate(&built.image, &mesh);
    let validate_seconds = start.elapsed().as_secs_f64();

    if let Some(path) = &args.dump {
        write_bytes_atomic(path, &built.image.bytes)?;
    }

    let m = &built.metrics;
    if args.json {
        let value = serde_json::json!({
            "mesh": args.mesh.display().to_string(),
            "threads": pool.current_num_threads(),
            "options": format!("{options:?}"),
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
        println!("{value}");
    } else {
        println!("mesh                {}", args.mesh.display());
        println!("triangles           {}", m.triangles);
        if built.dropped_nan_triangles > 0 {
            println!(
                "warning             {} triangles with NaN/infinite vertices dropped",
                built.dropped_nan_triangles
            );
        }
        println!("references          {}", built.references);
        println!("threads             {}", pool.current_num_threads());
        println!("options             {options:?}");
        println!("load (parse) s      {load_seconds:.3}");
        println!("build s             {:.3}", built.build_seconds);
        println!("encode s            {:.3}", built.encode_seconds);
        if let Some(cpu) = build_cpu_seconds {
            println!("build+encode CPU s  {cpu:.3} (all threads)");
        }
        if repeats.len() > 1 {
            println!(
                "build+encode s      first {first:.3}, best {best:.3}, median {median:.3} of {} in this process",
                repeats.len()
            );
        }
        println!("validate s          {validate_seconds:.3}");
        println!(
            "SAH cost            {:.3} (C_box = 1, C_tri = 1)",
            m.sah_cost
        );
        println!(
            "nodes               {} box16, {} box32, {} triangle",
            m.box16_nodes, m.box32_nodes, m.triangle_nodes
        );
        println!(
            "bytes               {} ({:.2} per triangle)",
            m.bytes, m.bytes_per_triangle
        );
        println!(
            "tris per tri node   1: {}, 2: {}, 3: {}, 4: {} (mean {:.2})",
            m.triangles_per_node_histogram[1],
            m.triangles_per_node_histogram[2],
            m.triangles_per_node_histogram[3],
            m.triangles_per_node_histogram[4],
            m.triangles_per_triangle_node()
        );
        println!("max depth           {}", m.max_depth);
        println!("box fill rate       {:.3}", m.fill_rate);
        if errors.is_empty() {
            println!("validator           valid");
        } else {
            println!("validator           INVALID ({} errors)", errors.len());
            for e in errors.iter().take(20) {
                println!("  {e}");
            }
        }
    }
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
