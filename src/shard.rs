//! Splitting a long job into shards that a cluster scheduler runs anywhere, and the part
//! files that carry each shard's results to `wavetrace merge`.
//!
//! A shard is `I/N`, 0-based. Which work it owns is decided here, so that every command
//! splits the same way and a merge can check the cover:
//! - items round-robin ([`Shard::owns`]): the tiles of a render, the variants of a profile,
//!   the ray files of a bench; neighbouring items cost about the same, so the shards stay
//!   balanced;
//! - a contiguous run of whole waves ([`Shard::waves`]) for a trace: a wave's TD is its
//!   global index modulo the TD count, so a shard that numbers its waves from the first one
//!   it owns counts into the same TDs as the whole run.
//!
//! A part file records the job's identity (a [`Digest`] of the inputs, the options that
//! change results, and the version), its shard and its results. Render parts are EXR images
//! whose header carries the same record (see the CLI's `render`); the other parts use the
//! container of this module:
//!
//! ```text
//! WAVETRACE PART 1\n
//! {header JSON: kind, job, job_summary, version, shard, payload_bytes, data}\n
//! payload (payload_bytes bytes)
//! END <16 hex digits: FNV-1a 64 of the header line and the payload>\n
//! ```
//!
//! so a truncated or altered part is refused, naming the file, before anything is merged.

use crate::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Shard `index` of `count` (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Environment variables `--shard auto` reads.
pub const SLURM_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";
pub const SLURM_TASK_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
pub const SLURM_TASK_MIN: &str = "SLURM_ARRAY_TASK_MIN";
pub const SLURM_TASK_MAX: &str = "SLURM_ARRAY_TASK_MAX";
pub const SLURM_TASK_STEP: &str = "SLURM_ARRAY_TASK_STEP";
pub const K8S_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";

/// The most shards a job can be split into.
pub const MAX_SHARDS: u32 = 1 << 20;

impl Shard {
    /// Shard `index` of `count`; `field` names the flag in the error.
    pub fn new(field: &str, index: u32, count: u32) -> Result<Shard> {
        if count == 0 || count > MAX_SHARDS {
            return Err(Error::field(
                field,
                format!("{count} shards: the count must be 1 to {MAX_SHARDS}"),
            ));
        }
        if index >= count {
            return Err(Error::field(
                field,
                format!("shard {index} of {count}: the index must be below the count (0-based)"),
            ));
        }
        Ok(Shard { index, count })
    }

    /// `I/N` as written on the command line (`--shard`).
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = || {
            Error::field(
                "--shard",
                format!("`{text}`: give I/N (0-based index I of N shards) or auto"),
            )
        };
        let (i, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let index = i.trim().parse::<u32>().map_err(|_| bad())?;
        let count = n.trim().parse::<u32>().map_err(|_| bad())?;
        Shard::new("--shard", index, count)
    }

    /// The shard a scheduler gave this task, read through `var` (the process environment in
    /// the CLI): a Slurm array task (`SLURM_ARRAY_TASK_ID`, counted by
    /// `SLURM_ARRAY_TASK_COUNT` or `_MIN`/`_MAX`, with `_STEP`), or a Kubernetes Indexed
    /// Job's `JOB_COMPLETION_INDEX` with `count` (`--shard-count`). A `count` beside a Slurm
    /// array must agree with it.
    pub fn from_env(var: impl Fn(&str) -> Option<String>, count: Option<u32>) -> Result<Shard> {
        let number = |name: &str| -> Result<Option<u64>> {
            match var(name) {
                None => Ok(None),
                Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                    Error::field(
                        "--shard auto",
                        format!("{name}={v}: not a non-negative integer"),
                    )
                }),
            }
        };
        let narrow = |name: &str, v: u64| {
            u32::try_from(v).map_err(|_| {
                Error::field(
                    "--shard auto",
                    format!("{name}={v}: too large a shard number"),
                )
            })
        };
        if let Some(id) = number(SLURM_TASK_ID)? {
            let min = number(SLURM_TASK_MIN)?.unwrap_or(0);
            let step = number(SLURM_TASK_STEP)?.unwrap_or(1).max(1);
            let from_env = match (number(SLURM_TASK_COUNT)?, number(SLURM_TASK_MAX)?) {
                (Some(n), _) => Some(n),
                (None, Some(max)) if max >= min => Some((max - min) / step + 1),
                _ => None,
            };
            if id < min || (id - min) % step != 0 {
                return Err(Error::field(
                    "--shard auto",
                    format!("{SLURM_TASK_ID}={id} is not a task of the array starting at {min} in steps of {step}"),
                ));
            }
            let index = narrow(SLURM_TASK_ID, (id - min) / step)?;
            let total = match (from_env, count) {
                (Some(n), Some(c)) if n != u64::from(c) => {
                    return Err(Error::field(
                        "--shard-count",
                        format!("{c}, but the Slurm array has {n} tasks"),
                    ))
                }
                (Some(n), _) => narrow(SLURM_TASK_COUNT, n)?,
                (None, Some(c)) => c,
                (None, None) => {
                    return Err(Error::field(
                        "--shard auto",
                        format!("{SLURM_TASK_ID} is set but neither {SLURM_TASK_COUNT} nor {SLURM_TASK_MAX} is; give --shard-count"),
                    ))
                }
            };
            return Shard::new("--shard auto", index, total);
        }
        if let Some(index) = number(K8S_COMPLETION_INDEX)? {
            let Some(total) = count else {
                return Err(Error::field(
                    "--shard auto",
                    format!("{K8S_COMPLETION_INDEX} gives the index only; give --shard-count (the Job's completions)"),
                ));
            };
            return Shard::new("--shard auto", narrow(K8S_COMPLETION_INDEX, index)?, total);
        }
        Err(Error::field(
            "--shard auto",
            format!("no scheduler task index in the environment ({SLURM_TASK_ID} or {K8S_COMPLETION_INDEX})"),
        ))
    }

    /// Whether this shard owns item `item` of a round-robin split.
    pub fn owns(&self, item: usize) -> bool {
        item % self.count as usize == self.index as usize
    }

    /// This shard's contiguous run of `waves` whole waves: `waves * I / N .. waves * (I+1) / N`.
    pub fn waves(&self, waves: u64) -> Range<u64> {
        let at = |i: u32| (u128::from(waves) * u128::from(i) / u128::from(self.count)) as u64;
        at(self.index)..at(self.index + 1)
    }
}

/// FNV-1a, 64 bits: a job's identity and a part's checksum. It is not a cryptographic hash:
/// it tells parts of different jobs apart and catches damaged files, which is all a merge
/// needs. [`Digest::bytes`] is FNV-1a itself; a [`Digest::field`]'s contents (meshes and ray
/// files of megabytes, which every shard hashes) go in eight bytes at a time, each
/// little-endian word xored into the state, which becomes the two halves of its 128-bit
/// product with 2^64/φ xored together (a plain 64-bit multiplication would only carry
/// upwards, so flips in two words could cancel); the tail byte by byte.
#[derive(Clone, Debug)]
pub struct Digest(u64);

/// The 64-bit FNV prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// 2^64 divided by the golden ratio, odd: the word mixer's multiplier.
const WORD_MULTIPLIER: u128 = 0x9e37_79b9_7f4a_7c15;

impl Default for Digest {
    fn default() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
}

impl Digest {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds raw bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        let mut h = self.0;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
        }
        self.0 = h;
        self
    }

    /// Adds a labelled field (its label, length and bytes, so that fields cannot run into
    /// each other).
    pub fn field(&mut self, label: &str, bytes: &[u8]) -> &mut Self {
        self.bytes(label.as_bytes())
            .bytes(&(bytes.len() as u64).to_le_bytes())
            .words(bytes)
    }

    /// Adds bytes eight at a time (the type's docs), the tail byte by byte.
    fn words(&mut self, bytes: &[u8]) -> &mut Self {
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            let product = u128::from(h ^ u64::from_le_bytes(w)) * WORD_MULTIPLIER;
            h = product as u64 ^ (product >> 64) as u64;
        }
        self.0 = h;
        self.bytes(words.remainder())
    }

    /// Adds the contents of the file at `path` as field `label`.
    pub fn file(&mut self, label: &str, path: &Path) -> Result<&mut Self> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Ok(self.field(label, &bytes))
    }

    pub fn value(&self) -> u64 {
        self.0
    }

    /// The digest as 16 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

impl std::fmt::Write for Digest {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

/// What a part holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartKind {
    Render,
    Trace,
    Profile,
    Bench,
}

impl PartKind {
    pub fn name(self) -> &'static str {
        match self {
            PartKind::Render => "render",
            PartKind::Trace => "trace",
            PartKind::Profile => "profile",
            PartKind::Bench => "bench",
        }
    }
}

/// The identity of a job: what every one of its parts must agree on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobId {
    pub kind: PartKind,
    /// [`Digest`] of the inputs, the options that change results and the version, 16 hex
    /// digits.
    pub job: String,
    /// The job in words (the command, its input and options), for messages.
    pub summary: String,
    /// The wavetrace version that made the part.
    pub version: String,
}

impl JobId {
    /// The identity of a `kind` job from its digest so far (inputs and options), with this
    /// build's version added.
    pub fn new(kind: PartKind, mut digest: Digest, summary: String) -> JobId {
        let version = env!("CARGO_PKG_VERSION").to_string();
        digest.field("kind", kind.name().as_bytes());
        digest.field("version", version.as_bytes());
        JobId {
            kind,
            job: digest.hex(),
            summary,
            version,
        }
    }
}

/// A part's header: whose job it is, which shard, and the kind's own record `T`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PartHeader<T> {
    pub id: JobId,
    pub shard: Shard,
    /// Bytes of the payload after the header (0 for an EXR part).
    pub payload_bytes: u64,
    pub data: T,
}

/// The first line of a container part.
pub const PART_MAGIC: &[u8] = b"WAVETRACE PART 1\n";

/// Writes a container part: the header (with `data`) and `payload`.
pub fn write_part<T: Serialize>(
    w: &mut dyn Write,
    id: &JobId,
    shard: Shard,
    data: &T,
    payload: &[u8],
) -> Result<()> {
    let header = PartHeader {
        id: id.clone(),
        shard,
        payload_bytes: payload.len() as u64,
        data,
    };
    let mut line = serde_json::to_vec(&header)
        .map_err(|e| Error::Other(format!("cannot encode the part header: {e}")))?;
    line.push(b'\n');
    let mut check = Digest::new();
    check.bytes(&line).bytes(payload);
    let io = |e: std::io::Error| Error::Other(format!("cannot write the part: {e}"));
    w.write_all(PART_MAGIC).map_err(io)?;
    w.write_all(&line).map_err(io)?;
    w.write_all(payload).map_err(io)?;
    w.write_all(format!("END {}\n", check.hex()).as_bytes())
        .map_err(io)
}

/// A part read from a file: its header and payload, checked whole.
#[derive(Clone, Debug)]
pub struct RawPart {
    pub path: PathBuf,
    pub id: JobId,
    pub shard: Shard,
    /// The header line (JSON), for [`RawPart::data`].
    header: String,
    pub payload: Vec<u8>,
}

/// The fields of a header every kind shares.
#[derive(Deserialize)]
struct Head {
    id: JobId,
    shard: Shard,
    payload_bytes: u64,
}

/// The `data` of a header, typed.
#[derive(Deserialize)]
struct DataOf<T> {
    data: T,
}

impl RawPart {
    /// Whether `bytes` start like a container part.
    pub fn is_container(bytes: &[u8]) -> bool {
        bytes.starts_with(PART_MAGIC)
    }

    /// Reads and checks the container part in `bytes` (the contents of `path`): the magic,
    /// the header, the payload's length and the trailer's checksum. Every error names `path`.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<RawPart> {
        let bad = |message: String| Error::Parse {
            path: path.to_path_buf(),
            line: 0,
            message,
        };
        let rest = bytes
            .strip_prefix(PART_MAGIC)
            .ok_or_else(|| bad("not a wavetrace part file (no `WAVETRACE PART 1` line)".into()))?;
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("truncated part file: the header line has no end".into()))?;
        let header = std::str::from_utf8(&rest[..end])
            .map_err(|_| bad("the part header is not UTF-8".into()))?;
        let head: Head = serde_json::from_str(header).map_err(|e| Error::Parse {
            path: path.to_path_buf(),
            line: 2,
            message: format!("bad part header: {e}"),
        })?;
        let after = &rest[end + 1..];
        const TRAILER: usize = 4 + 16 + 1;
        let want = usize::try_from(head.payload_bytes)
            .ok()
            .and_then(|p| p.checked_add(TRAILER))
            .ok_or_else(|| bad(format!("payload of {} bytes", head.payload_bytes)))?;
        if after.len() != want {
            return Err(bad(format!(
                "{} part file: {} bytes after the header where it promises {} (payload {} + trailer)",
                if after.len() < want { "truncated" } else { "overlong" },
                after.len(),
                want,
                head.payload_bytes
            )));
        }
        let (payload, trailer) = after.split_at(after.len() - TRAILER);
        let mut check = Digest::new();
        check.bytes(&rest[..=end]).bytes(payload);
        if trailer != format!("END {}\n", check.hex()).as_bytes() {
            return Err(bad(
                "damaged part file: its checksum does not match its contents".into(),
            ));
        }
        Ok(RawPart {
            path: path.to_path_buf(),
            id: head.id,
            shard: head.shard,
            header: header.to_string(),
            payload: payload.to_vec(),
        })
    }

    /// The kind's record in the header.
    pub fn data<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_str::<DataOf<T>>(&self.header)
            .map(|d| d.data)
            .map_err(|e| Error::Parse {
                path: self.path.clone(),
                line: 2,
                message: format!("bad {} part record: {e}", self.id.kind.name()),
            })
    }
}

/// What a merge knows of each part before it reads the results: where it came from, whose
/// job it is and which shard.
#[derive(Clone, Debug)]
pub struct PartInfo {
    pub path: PathBuf,
    pub id: JobId,
    pub shard: Shard,
}

/// Checks that `parts` are one job's and cover it exactly once: the same kind, job digest
/// and version, the same shard count, no shard twice, none missing. Errors name the part at
/// fault (for a missing shard, the shards that are missing). Returns the parts' order by
/// shard index.
pub fn check_cover(parts: &[PartInfo]) -> Result<Vec<usize>> {
    let Some(first) = parts.first() else {
        return Err(Error::Other("merge: no part files given".into()));
    };
    for p in &parts[1..] {
        if p.id.kind != first.id.kind {
            return Err(Error::Other(format!(
                "{}: a {} part, but {} is a {} part; merge parts of one job",
                p.path.display(),
                p.id.kind.name(),
                first.path.display(),
                first.id.kind.name()
            )));
        }
        if p.id.job != first.id.job || p.id.version != first.id.version {
            return Err(Error::Other(format!(
                "{}: a part of another job ({}, job {}, wavetrace {}) than {} ({}, job {}, wavetrace {})",
                p.path.display(),
                p.id.summary,
                p.id.job,
                p.id.version,
                first.path.display(),
                first.id.summary,
                first.id.job,
                first.id.version
            )));
        }
        if p.shard.count != first.shard.count {
            return Err(Error::Other(format!(
                "{}: shard {} of a job split {} ways, but {} is shard {} (split {} ways)",
                p.path.display(),
                p.shard,
                p.shard.count,
                first.path.display(),
                first.shard,
                first.shard.count
            )));
        }
    }
    let count = first.shard.count as usize;
    let mut by_index: Vec<Option<usize>> = vec![None; count];
    for (k, p) in parts.iter().enumerate() {
        let slot = &mut by_index[p.shard.index as usize];
        if let Some(other) = *slot {
            return Err(Error::Other(format!(
                "{}: shard {} again (already in {})",
                p.path.display(),
                p.shard,
                parts[other].path.display()
            )));
        }
        *slot = Some(k);
    }
    let missing: Vec<String> = (by_index.iter().enumerate())
        .filter(|(_, k)| k.is_none())
        .map(|(i, _)| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        const SHOWN: usize = 20;
        let more = if missing.len() > SHOWN {
            format!(" and {} more", missing.len() - SHOWN)
        } else {
            String::new()
        };
        return Err(Error::Other(format!(
            "missing part{}: shard {}{more} of job {} ({}); {} of {count} parts given",
            if missing.len() > 1 { "s" } else { "" },
            missing[..missing.len().min(SHOWN)].join(", "),
            first.id.job,
            first.id.summary,
            parts.len()
        )));
    }
    Ok(by_index.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn parses_index_and_count() {
        assert_eq!(Shard::parse("2/7").unwrap(), Shard { index: 2, count: 7 });
        assert_eq!(
            Shard::parse(" 0 / 1 ").unwrap(),
            Shard { index: 0, count: 1 }
        );
        for bad in ["7/7", "1/0", "-1/3", "a/3", "3", "1/2/3", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slurm_and_kubernetes_environments() {
        let s = |v: &[(&str, &str)], c| Shard::from_env(env(v), c);
        assert_eq!(
            s(
                &[
                    ("SLURM_ARRAY_TASK_ID", "3"),
                    ("SLURM_ARRAY_TASK_COUNT", "4")
                ],
                None
            )
            .unwrap(),
            Shard { index: 3, count: 4 }
        );
        // An array numbered 1..=4 in steps of 1, counted by MIN and MAX.
        assert_eq!(
            s(
                &[
                    ("SLURM_ARRAY_TASK_ID", "1"),
                    ("SLURM_ARRAY_TASK_MIN", "1"),
                    ("SLURM_ARRAY_TASK_MAX", "4")
                ],
                None
            )
            .unwrap(),
            Shard { index: 0, count: 4 }
        );
        // 0-8:4 is tasks 0, 4, 8.
        assert_eq!(
            s(
                &[
                    ("SLURM_ARRAY_TASK_ID", "8"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_MAX", "8"),
                    ("SLURM_ARRAY_TASK_STEP", "4")
                ],
                None
            )
            .unwrap(),
            Shard { index: 2, count: 3 }
        );
        assert!(s(
            &[
                ("SLURM_ARRAY_TASK_ID", "3"),
                ("SLURM_ARRAY_TASK_COUNT", "4")
            ],
            Some(5)
        )
        .is_err());
        assert!(s(&[("SLURM_ARRAY_TASK_ID", "3")], None).is_err());
        assert_eq!(
            s(&[("JOB_COMPLETION_INDEX", "5")], Some(7)).unwrap(),
            Shard { index: 5, count: 7 }
        );
        assert!(s(&[("JOB_COMPLETION_INDEX", "5")], None).is_err());
        assert!(s(&[("JOB_COMPLETION_INDEX", "7")], Some(7)).is_err());
        assert!(s(&[("JOB_COMPLETION_INDEX", "x")], Some(7)).is_err());
        assert!(s(&[], Some(7)).is_err());
    }

    #[test]
    fn round_robin_and_wave_runs_cover_everything_once() {
        for count in [1u32, 2, 3, 7] {
            let shards: Vec<Shard> = (0..count).map(|i| Shard { index: i, count }).collect();
            for items in [0usize, 1, 5, 64, 1001] {
                for item in 0..items {
                    assert_eq!(shards.iter().filter(|s| s.owns(item)).count(), 1);
                }
                let runs: Vec<Range<u64>> = shards.iter().map(|s| s.waves(items as u64)).collect();
                assert_eq!(runs[0].start, 0);
                assert_eq!(runs[runs.len() - 1].end, items as u64);
                for pair in runs.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                }
            }
        }
    }

    #[test]
    fn a_field_tells_apart_a_change_of_any_bit_of_its_contents() {
        let base: Vec<u8> = (0..67u32).map(|i| (i * 37 + 11) as u8).collect();
        let of = |b: &[u8]| Digest::new().field("f", b).value();
        let mut seen = vec![of(&base)];
        for bit in 0..base.len() * 8 {
            let mut b = base.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            seen.push(of(&b));
        }
        // Two flips in different words (a top bit and a bit of the next word: the pair a
        // 64-bit multiply-and-fold mixer cannot tell from one flip), a length change.
        for (i, j) in [(63, 127), (63, 95), (7, 71), (200, 263)] {
            let mut twice = base.clone();
            twice[i / 8] ^= 1 << (i % 8);
            twice[j / 8] ^= 1 << (j % 8);
            seen.push(of(&twice));
        }
        seen.push(of(&base[..66]));
        let mut unique = seen.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), seen.len());
    }

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        // From the FNV reference test suite: "" and "a" and "foobar".
        assert_eq!(Digest::new().value(), 0xcbf29ce484222325);
        assert_eq!(Digest::new().bytes(b"a").value(), 0xaf63dc4c8601ec8c);
        assert_eq!(Digest::new().bytes(b"foobar").value(), 0x85944171f73967e8);
    }

    fn part_bytes(payload: &[u8]) -> Vec<u8> {
        let id = JobId::new(PartKind::Trace, Digest::new(), "trace x".into());
        let mut out = Vec::new();
        write_part(
            &mut out,
            &id,
            Shard { index: 1, count: 3 },
            &vec![1.5f64, 2.0],
            payload,
        )
        .unwrap();
        out
    }

    #[test]
    fn container_round_trip_and_damage() {
        let path = Path::new("p.wtpart");
        let bytes = part_bytes(b"hits\x00\x01");
        let part = RawPart::parse(path, &bytes).unwrap();
        assert_eq!(part.shard, Shard { index: 1, count: 3 });
        assert_eq!(part.payload, b"hits\x00\x01");
        assert_eq!(part.data::<Vec<f64>>().unwrap(), vec![1.5, 2.0]);
        for cut in [1, 10, bytes.len() - 30, bytes.len() - 1] {
            let err = RawPart::parse(path, &bytes[..cut]).unwrap_err().to_string();
            assert!(err.contains("p.wtpart"), "{err}");
        }
        let mut flipped = bytes.clone();
        let at = bytes.len() - 25;
        flipped[at] ^= 1;
        let err = RawPart::parse(path, &flipped).unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn cover_names_foreign_duplicate_and_missing_parts() {
        let id = JobId::new(PartKind::Trace, Digest::new(), "job a".into());
        let mut other_digest = Digest::new();
        other_digest.bytes(b"other");
        let other = JobId::new(PartKind::Trace, other_digest, "job b".into());
        let info = |name: &str, id: &JobId, index, count| PartInfo {
            path: PathBuf::from(name),
            id: id.clone(),
            shard: Shard { index, count },
        };
        let ok = [info("b", &id, 1, 2), info("a", &id, 0, 2)];
        assert_eq!(check_cover(&ok).unwrap(), vec![1, 0]);
        let foreign = [info("a", &id, 0, 2), info("x", &other, 1, 2)];
        assert!(check_cover(&foreign)
            .unwrap_err()
            .to_string()
            .starts_with("x:"));
        let twice = [info("a", &id, 0, 2), info("b", &id, 0, 2)];
        assert!(check_cover(&twice)
            .unwrap_err()
            .to_string()
            .starts_with("b:"));
        let missing = [info("a", &id, 0, 3), info("c", &id, 2, 3)];
        let err = check_cover(&missing).unwrap_err().to_string();
        assert!(err.contains("shard 1/3"), "{err}");
        let split = [info("a", &id, 0, 2), info("b", &id, 1, 3)];
        assert!(check_cover(&split)
            .unwrap_err()
            .to_string()
            .starts_with("b:"));
    }
}

/// Reading back what the reports write, for the part files: JSON has no NaN (serde_json
/// writes it as `null`), and some report fields are names from fixed tables (`&'static
/// str`).
pub mod de {
    use serde::{Deserialize, Deserializer};
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    /// A name from a fixed table. (Spelled as an alias so that serde does not borrow it from
    /// the input, as it does a field typed `&str`.)
    pub type Name = &'static str;

    /// An `f64` written by serde_json: `null` stands for the NaN it cannot write.
    pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }

    /// A name as a `&'static str`: each distinct name is allocated once for the life of the
    /// process (names come from small fixed tables: axes, consoles, bounds, links).
    pub fn interned<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        Ok(intern(String::deserialize(d)?))
    }

    /// [`interned`] for an optional name.
    pub fn interned_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'static str>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(intern))
    }

    fn intern(name: String) -> &'static str {
        static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
        let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&known) = names.get(name.as_str()) {
            return known;
        }
        let leaked: &'static str = Box::leak(name.into_boxed_str());
        names.insert(leaked);
        leaked
    }
}
