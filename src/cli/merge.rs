//! `wavetrace merge PARTS... -o OUT`: the parts of a sharded job (`--shard` on `render`,
//! `trace`, `profile`, `bench`) back into the job's outputs, the same bytes as the unsharded
//! run's (timings aside).
//!
//! Every part is read and checked before anything is written: one job (kind, job digest,
//! version), every shard once, none missing; a damaged or truncated part is refused. Each
//! command's module merges its own kind, since it owns the output formats.

use super::flags::JsonArg;
use std::path::{Path, PathBuf};
use wavetrace::outfile::{OutputId, OutputSet};
use wavetrace::render::read_exr;
use wavetrace::shard::{check_cover, PartHeader, PartInfo, PartKind, RawPart};
use wavetrace::{Error, Result};

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The part files of one job, in any order.
    #[arg(required = true, num_args = 1.., value_name = "PARTS")]
    pub parts: Vec<PathBuf>,
    /// The job's output: the image of a render (.png or .exr), the hit file of a trace, the
    /// report of a profile (.csv, .json, or the text table otherwise) or of a bench (JSON).
    #[arg(short = 'o', long)]
    pub out: PathBuf,
    /// The stats of a render or trace, the report of a profile or bench, as the unsharded
    /// command writes them.
    #[command(flatten)]
    pub json: JsonArg,
    /// A profile's table as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// A profile's table with every column.
    #[arg(long)]
    pub wide: bool,
}

/// A part as read: a render part (an EXR and its record) or a container part.
pub enum Part {
    Render {
        image: wavetrace::render::Image,
        header: Box<PartHeader<super::render::RenderPart>>,
    },
    Container(RawPart),
}

/// The parts of one job, in shard order, with where each came from.
pub struct Parts {
    pub kind: PartKind,
    pub paths: Vec<PathBuf>,
    pub parts: Vec<Part>,
}

/// The registered outputs of a merge.
pub struct MergeOutputs {
    pub out: OutputId,
    pub json: Option<OutputId>,
    pub csv: Option<OutputId>,
}

/// The EXR magic number (the first four bytes of every EXR file).
const EXR_MAGIC: [u8; 4] = [0x76, 0x2f, 0x31, 0x01];

pub fn run(args: MergeArgs) -> Result<i32> {
    let mut outputs = OutputSet::new();
    let ids = MergeOutputs {
        out: outputs.file("--out", &args.out)?,
        json: args.json.register(&mut outputs)?,
        csv: (args.csv.as_deref())
            .map(|p| outputs.file("--csv", p))
            .transpose()?,
    };
    let parts = read_parts(&args.parts)?;
    super::interrupt::check(&outputs)?;
    if parts.kind != PartKind::Profile && (ids.csv.is_some() || args.wide) {
        return Err(Error::field(
            if args.wide { "--wide" } else { "--csv" },
            format!(
                "for profile parts only; these are {} parts",
                parts.kind.name()
            ),
        ));
    }
    // A profile with wrong variants exits 1 as `profile` does (its outputs written).
    let mut code = 0;
    match parts.kind {
        PartKind::Render => super::render::merge(&parts, &args, &mut outputs, &ids)?,
        PartKind::Trace => super::trace::merge(&parts, &args, &mut outputs, &ids)?,
        PartKind::Profile => {
            if super::profile::merge(&parts, &args, &mut outputs, &ids)? {
                code = 1;
            }
        }
        PartKind::Bench => super::bench::merge(&parts, &args, &mut outputs, &ids)?,
    }
    super::interrupt::check(&outputs)?;
    outputs.commit()?;
    Ok(code)
}

/// Reads every part, says which it read, and checks they cover one job exactly once;
/// returns them in shard order.
fn read_parts(paths: &[PathBuf]) -> Result<Parts> {
    let mut infos = Vec::with_capacity(paths.len());
    let mut read = Vec::with_capacity(paths.len());
    for path in paths {
        let (info, part) = read_part(path)?;
        eprintln!(
            "read {}: {} part {} of job {} ({})",
            path.display(),
            info.id.kind.name(),
            info.shard,
            info.id.job,
            info.id.summary
        );
        infos.push(info);
        read.push(Some(part));
    }
    let order = check_cover(&infos)?;
    let kind = infos[0].id.kind;
    eprintln!(
        "{} parts of job {}: every shard of {} once",
        paths.len(),
        infos[0].id.job,
        infos[0].shard.count
    );
    Ok(Parts {
        kind,
        paths: order.iter().map(|&k| paths[k].clone()).collect(),
        parts: order.iter().filter_map(|&k| read[k].take()).collect(),
    })
}

/// Reads one part file (an EXR render part or a container part).
fn read_part(path: &Path) -> Result<(PartInfo, Part)> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if bytes.starts_with(&EXR_MAGIC) {
        drop(bytes);
        let (image, attributes) = read_exr(path)?;
        let attribute = super::render::PART_ATTRIBUTE;
        let record = (attributes.iter())
            .find(|(name, _)| name == attribute)
            .map(|(_, value)| value)
            .ok_or_else(|| Error::Parse {
                path: path.to_path_buf(),
                line: 0,
                message: format!(
                    "an EXR image without the `{attribute}` attribute: not a render part"
                ),
            })?;
        let header: PartHeader<super::render::RenderPart> =
            serde_json::from_str(record).map_err(|e| Error::Parse {
                path: path.to_path_buf(),
                line: 0,
                message: format!("bad `{attribute}` attribute: {e}"),
            })?;
        if header.id.kind != PartKind::Render {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: 0,
                message: format!("an EXR part of a {} job", header.id.kind.name()),
            });
        }
        let info = PartInfo {
            path: path.to_path_buf(),
            id: header.id.clone(),
            shard: header.shard,
        };
        return Ok((
            info,
            Part::Render {
                image,
                header: Box::new(header),
            },
        ));
    }
    if !RawPart::is_container(&bytes) {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            line: 0,
            message:
                "not a wavetrace part (neither an EXR render part nor a `WAVETRACE PART` file)"
                    .into(),
        });
    }
    let part = RawPart::parse(path, &bytes)?;
    if part.id.kind == PartKind::Render {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            line: 0,
            message: "a render part must be an EXR image".into(),
        });
    }
    let info = PartInfo {
        path: path.to_path_buf(),
        id: part.id.clone(),
        shard: part.shard,
    };
    Ok((info, Part::Container(part)))
}

impl Parts {
    /// The container parts with their paths (every part of a trace, profile or bench job).
    pub fn containers(&self) -> impl Iterator<Item = (&Path, &RawPart)> {
        self.paths
            .iter()
            .zip(&self.parts)
            .filter_map(|(path, p)| match p {
                Part::Container(raw) => Some((path.as_path(), raw)),
                Part::Render { .. } => None,
            })
    }
}
