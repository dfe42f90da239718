//! Output files written whole or not at all.
//!
//! Every file the program writes (images, hit files, JSON and CSV reports, BVH dumps, tiled
//! textures, instruction results) goes first to a temporary file beside its target, which is
//! flushed, synced and renamed over the target only when everything was written. A failure
//! on the way (a bad input found half way, a full disk, Ctrl-C in a render) removes the
//! temporary file and leaves the target as it was: never a half-written output.

use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary file [`write_atomic`] writes before renaming: `.NAME.PID.partial` beside
/// the target (hidden, and distinct for two processes writing the same target).
pub fn partial_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

/// Writes `path` through `produce`: the bytes go to [`partial_path`], which is renamed onto
/// `path` only when `produce` succeeds and the data reached the disk. On any error the
/// partial file is removed and `path` is left as it was. Errors of the file system name
/// `path`, the file the user asked for, not the temporary name.
pub fn write_atomic(path: &Path, produce: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let tmp = partial_path(path);
    let result = (|| {
        let file = std::fs::File::create(&tmp).map_err(|e| Error::io(path, e))?;
        let mut w = std::io::BufWriter::new(file);
        produce(&mut w)?;
        let file = w
            .into_inner()
            .map_err(|e| Error::io(path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(path, e))?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// [`write_atomic`] of bytes already in memory.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, |w| w.write_all(bytes).map_err(|e| Error::io(path, e)))
}

/// The outputs of one command, written as a transaction: all of them or none.
///
/// A command registers every output path before it does any work ([`OutputSet::file`],
/// [`OutputSet::dir`]); registration checks that the directory exists and is writable (by
/// creating and removing the temporary file), that the path is not a directory, and that no
/// two outputs are the same file. During the command each output is written to its
/// [`partial_path`]; [`OutputSet::commit`] renames them all onto their targets at the end.
/// Dropping the set without committing (an error, an interrupt) removes every temporary
/// file, and every directory the set created, so a failed command leaves no output behind,
/// including the ones it finished before the failure.
#[derive(Debug, Default)]
pub struct OutputSet {
    files: Vec<Pending>,
    /// The one output that goes to standard output (`-`), held in memory and printed at
    /// [`OutputSet::commit`], after the files are in place.
    stdout: Option<Vec<u8>>,
    /// Registered output directories: the flag and the path.
    dirs: Vec<(String, PathBuf)>,
    /// Directories created by [`OutputSet::write_in_dir`], outermost first.
    created: Vec<PathBuf>,
}

/// One output file of an [`OutputSet`].
#[derive(Debug)]
struct Pending {
    flag: String,
    target: PathBuf,
    tmp: PathBuf,
    written: bool,
}

/// An output file registered in an [`OutputSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputId(usize);

/// The [`OutputId`] of the standard-output entry (files are numbered from 0 up).
const STDOUT_ID: usize = usize::MAX;

/// An output directory registered in an [`OutputSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputDir(usize);

impl OutputSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the output file `path` of `flag` (used in messages): its directory must
    /// exist and be writable, `path` must not be a directory, and no other output of the set
    /// may be the same file.
    pub fn file(&mut self, flag: &str, path: &Path) -> Result<OutputId> {
        if let Some(other) = self.files.iter().find(|p| p.target == path) {
            return Err(Error::field(
                flag,
                format!(
                    "{}: the same file as {}; give each output its own file",
                    path.display(),
                    other.flag
                ),
            ));
        }
        if path.is_dir() {
            return Err(Error::field(
                flag,
                format!("{}: is a directory, not a file", path.display()),
            ));
        }
        let tmp = partial_path(path);
        probe(flag, path, &tmp)?;
        self.files.push(Pending {
            flag: flag.to_string(),
            target: path.to_path_buf(),
            tmp,
            written: false,
        });
        Ok(OutputId(self.files.len() - 1))
    }

    /// Registers the output `path` of `flag` as [`OutputSet::file`] does, except that `-`
    /// means standard output: that output is kept in memory and printed at
    /// [`OutputSet::commit`] (so a failed command prints none of it). A set has at most one
    /// standard-output entry.
    pub fn file_or_stdout(&mut self, flag: &str, path: &Path) -> Result<OutputId> {
        if path != Path::new("-") {
            return self.file(flag, path);
        }
        if self.stdout.is_some() {
            return Err(Error::field(
                flag,
                "only one output of a command can go to standard output (-)",
            ));
        }
        self.stdout = Some(Vec::new());
        Ok(OutputId(STDOUT_ID))
    }

    /// Whether an output of the set goes to standard output (the command's text report
    /// then belongs on standard error).
    pub fn has_stdout(&self) -> bool {
        self.stdout.is_some()
    }

    /// Registers the output directory `dir` of `flag`, whose files are named later
    /// ([`OutputSet::write_in_dir`]): `dir` must be a directory, or not exist yet with a
    /// writable directory as its nearest existing ancestor (it is then created when its
    /// first file is written, and removed again if the set is not committed).
    pub fn dir(&mut self, flag: &str, dir: &Path) -> Result<OutputDir> {
        let mut existing = dir;
        while !existing.as_os_str().is_empty() && !existing.exists() {
            existing = existing.parent().unwrap_or(Path::new(""));
        }
        if existing.as_os_str().is_empty() {
            existing = Path::new(".");
        }
        if !existing.is_dir() {
            return Err(Error::field(
                flag,
                format!(
                    "{}: {} is not a directory",
                    dir.display(),
                    existing.display()
                ),
            ));
        }
        let probe_file = existing.join(format!(".wavetrace-probe.{}.partial", std::process::id()));
        probe(flag, dir, &probe_file)?;
        self.dirs.push((flag.to_string(), dir.to_path_buf()));
        Ok(OutputDir(self.dirs.len() - 1))
    }

    /// The target path of `id` (`-` for standard output).
    pub fn path(&self, id: OutputId) -> &Path {
        if id.0 == STDOUT_ID {
            return Path::new("-");
        }
        &self.files[id.0].target
    }

    /// Writes the output `id` through `produce` to its temporary file, flushed and synced.
    /// Errors of the file system name the target, not the temporary name.
    pub fn write(
        &mut self,
        id: OutputId,
        produce: impl FnOnce(&mut dyn Write) -> Result<()>,
    ) -> Result<()> {
        if id.0 == STDOUT_ID {
            let mut buffer = Vec::new();
            produce(&mut buffer)?;
            self.stdout = Some(buffer);
            return Ok(());
        }
        let entry = &mut self.files[id.0];
        entry.written = true;
        let path = entry.target.as_path();
        let file = std::fs::File::create(&entry.tmp).map_err(|e| Error::io(path, e))?;
        let mut w = std::io::BufWriter::new(file);
        produce(&mut w)?;
        let file = w
            .into_inner()
            .map_err(|e| Error::io(path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(path, e))
    }

    /// [`OutputSet::write`] of bytes already in memory.
    pub fn write_bytes(&mut self, id: OutputId, bytes: &[u8]) -> Result<()> {
        let path = self.path(id).to_path_buf();
        self.write(id, |w| w.write_all(bytes).map_err(|e| Error::io(&path, e)))
    }

    /// Writes the file `name` of the output directory `dir` (creating the directory on
    /// first use); it is renamed into place with the other outputs at [`OutputSet::commit`].
    pub fn write_in_dir(&mut self, dir: OutputDir, name: &str, bytes: &[u8]) -> Result<()> {
        let (flag, path) = self.dirs[dir.0].clone();
        if !path.is_dir() {
            // Remember the directories this creates, outermost first, to remove them again.
            let mut missing = Vec::new();
            let mut p = path.as_path();
            while !p.as_os_str().is_empty() && !p.exists() {
                missing.push(p.to_path_buf());
                p = p.parent().unwrap_or(Path::new(""));
            }
            std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
            self.created.extend(missing.into_iter().rev());
        }
        let id = self.file(&flag, &path.join(name))?;
        self.write_bytes(id, bytes)
    }

    /// Every registered output file and directory, in the order they were registered.
    pub fn targets(&self) -> impl Iterator<Item = &Path> {
        self.files
            .iter()
            .map(|p| p.target.as_path())
            .chain(self.dirs.iter().map(|(_, d)| d.as_path()))
    }

    /// The targets written so far, in the order they were registered.
    pub fn written(&self) -> impl Iterator<Item = &Path> {
        self.files
            .iter()
            .filter(|p| p.written)
            .map(|p| p.target.as_path())
    }

    /// Renames every written temporary file onto its target (outputs registered but not
    /// written are skipped), then prints the standard-output entry. On an error the
    /// remaining temporary files are removed.
    pub fn commit(mut self) -> Result<()> {
        let files = std::mem::take(&mut self.files);
        let mut result = Ok(());
        for p in files.iter().filter(|p| p.written) {
            if result.is_ok() {
                result = std::fs::rename(&p.tmp, &p.target).map_err(|e| Error::io(&p.target, e));
            }
            if result.is_err() {
                let _ = std::fs::remove_file(&p.tmp);
            }
        }
        self.created.clear();
        result?;
        if let Some(bytes) = self.stdout.take() {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|()| out.flush())
                .map_err(|e| Error::io("<stdout>", e))?;
        }
        Ok(())
    }
}

impl Drop for OutputSet {
    /// An uncommitted set removes its temporary files and the directories it created.
    fn drop(&mut self) {
        for p in self.files.iter().filter(|p| p.written) {
            let _ = std::fs::remove_file(&p.tmp);
        }
        for dir in self.created.iter().rev() {
            // Only empty ones: anything else there is not this set's.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Checks that `tmp` (in the directory of the output `path` of `flag`) can be created, and
/// removes it again.
fn probe(flag: &str, path: &Path, tmp: &Path) -> Result<()> {
    match std::fs::File::create(tmp) {
        Ok(file) => {
            drop(file);
            let _ = std::fs::remove_file(tmp);
            Ok(())
        }
        Err(e) => {
            let reason = match e.kind() {
                std::io::ErrorKind::NotFound => "its directory does not exist".to_string(),
                std::io::ErrorKind::PermissionDenied => "its directory is not writable".to_string(),
                _ => format!("cannot write there ({e})"),
            };
            Err(Error::field(flag, format!("{}: {reason}", path.display())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory of its own under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("wavetrace-outfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn bytes_replace_the_target_and_leave_no_partial_file() {
        let dir = scratch("bytes");
        let out = dir.join("hits.bin");
        std::fs::write(&out, b"old").unwrap();
        write_bytes_atomic(&out, b"new contents").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new contents");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failing_producer_keeps_the_old_target_and_removes_its_partial_file() {
        let dir = scratch("fail");
        let out = dir.join("report.json");
        std::fs::write(&out, b"old").unwrap();
        let e = write_atomic(&out, |w| {
            w.write_all(b"half a report").unwrap();
            Err(Error::Other("interrupted".into()))
        });
        assert!(
            matches!(e, Err(Error::Other(ref m)) if m == "interrupted"),
            "{e:?}"
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        assert!(!partial_path(&out).exists());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_reported_under_the_target_name() {
        let dir = scratch("missing");
        let out = dir.join("no-such-dir").join("out.png");
        let message = write_bytes_atomic(&out, b"x").unwrap_err().to_string();
        assert!(message.contains(&*out.to_string_lossy()), "{message}");
        assert!(!message.contains("partial"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_output_set_renames_all_its_files_at_commit() {
        let dir = scratch("set-commit");
        let mut set = OutputSet::new();
        let a = set.file("--out", &dir.join("a.bin")).unwrap();
        let b = set.file("--stats", &dir.join("b.json")).unwrap();
        let maps = set
            .dir("--heatmaps", &dir.join("maps").join("deep"))
            .unwrap();
        set.write_bytes(a, b"aaa").unwrap();
        set.write_bytes(b, b"bbb").unwrap();
        set.write_in_dir(maps, "x.png", b"xxx").unwrap();
        assert!(
            !dir.join("a.bin").exists(),
            "nothing in place before commit"
        );
        set.commit().unwrap();
        assert_eq!(std::fs::read(dir.join("a.bin")).unwrap(), b"aaa");
        assert_eq!(std::fs::read(dir.join("b.json")).unwrap(), b"bbb");
        assert_eq!(
            std::fs::read(dir.join("maps").join("deep").join("x.png")).unwrap(),
            b"xxx"
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_output_set_dropped_without_commit_leaves_nothing() {
        let dir = scratch("set-drop");
        std::fs::write(dir.join("a.bin"), b"old").unwrap();
        {
            let mut set = OutputSet::new();
            let a = set.file("--out", &dir.join("a.bin")).unwrap();
            let maps = set
                .dir("--heatmaps", &dir.join("maps").join("deep"))
                .unwrap();
            set.write_bytes(a, b"new").unwrap();
            set.write_in_dir(maps, "x.png", b"xxx").unwrap();
            assert_eq!(set.written().count(), 2);
        }
        assert_eq!(std::fs::read(dir.join("a.bin")).unwrap(), b"old");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no partial, no maps/"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn registration_refuses_missing_directories_directories_and_duplicates() {
        let dir = scratch("set-check");
        let mut set = OutputSet::new();
        let missing = dir.join("missing").join("s.json");
        let message = set.file("--stats", &missing).unwrap_err().to_string();
        assert!(message.contains("--stats"), "{message}");
        assert!(message.contains(&*missing.to_string_lossy()), "{message}");
        let message = set.file("--out", &dir).unwrap_err().to_string();
        assert!(message.contains("is a directory"), "{message}");
        set.file("--out", &dir.join("o.png")).unwrap();
        let message = set
            .file("--heatmap", &dir.join("o.png"))
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("--heatmap") && message.contains("--out"),
            "{message}"
        );
        std::fs::write(dir.join("plain"), b"").unwrap();
        let message = set
            .dir("--heatmaps", &dir.join("plain").join("maps"))
            .unwrap_err()
            .to_string();
        assert!(message.contains("not a directory"), "{message}");
        drop(set);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only `plain`");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
