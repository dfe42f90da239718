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
}
