//! Progress of long ray runs (`trace`, `profile`) on a terminal: rays traced out of the
//! total, the rate and the time left. Nothing is drawn when standard error is not a
//! terminal, nor for a run that ends within its first second.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a run goes before its bar appears.
const QUIET_START: Duration = Duration::from_secs(1);
/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// A progress display fed by a shared count of rays traced.
pub struct RayProgress {
    /// Rays traced so far; the tracer (or the profile loop) adds to it.
    pub rays: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RayProgress {
    /// Starts watching `total` rays of `what` (e.g. "trace", "profile: 25 variants").
    pub fn start(total: u64, what: &str) -> RayProgress {
        let rays = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let thread = std::io::stderr().is_terminal().then(|| {
            let (rays, done, what) = (rays.clone(), done.clone(), what.to_string());
            std::thread::spawn(move || watch(&rays, &done, total, &what))
        });
        RayProgress { rays, done, thread }
    }
}

impl Drop for RayProgress {
    /// Stops the display and clears its line.
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The display thread: waits [`QUIET_START`], then redraws every [`TICK`] until `done`.
fn watch(rays: &AtomicU64, done: &AtomicBool, total: u64, what: &str) {
    let start = Instant::now();
    while start.elapsed() < QUIET_START {
        if done.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(TICK);
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {percent}% {human_pos}/{human_len} rays, {per_sec} (eta {eta}) {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    while !done.load(Ordering::Relaxed) {
        bar.set_position(rays.load(Ordering::Relaxed).min(total));
        std::thread::sleep(TICK);
    }
    bar.finish_and_clear();
}
