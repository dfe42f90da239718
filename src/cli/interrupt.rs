//! SIGINT and SIGTERM: one process-wide cancel flag for every long command.
//!
//! The first signal only sets the flag (and remembers which signal it was); commands check
//! it between their phases and before committing their outputs, and an interrupted command
//! drops its [`OutputSet`] (removing every temporary file), says what was not written and
//! exits 128 + the signal number (130 for SIGINT, 143 for SIGTERM). A second signal ends the
//! process at once with the same code.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use wavetrace::outfile::OutputSet;
use wavetrace::{Error, Result};

/// Set by the first SIGINT or SIGTERM.
static CANCEL: AtomicBool = AtomicBool::new(false);
/// The number of that signal (0 before any).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// Installs the handlers of SIGINT and SIGTERM (SIGINT only where libc is not linked in);
/// a failure to install them leaves the default actions.
pub fn install() {
    #[cfg(target_os = "linux")]
    {
        extern "C" fn on_signal(signal: libc::c_int) {
            // Only atomics and _exit here: both are async-signal-safe.
            match SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => CANCEL.store(true, Ordering::SeqCst),
                // SAFETY: _exit ends the process without running any Rust code.
                Err(_) => unsafe { libc::_exit(128 + signal) },
            }
        }
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction is valid (empty mask, no flags) before it is filled
            // in; the handler only touches atomics.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = libc::SA_RESTART;
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = ctrlc::set_handler(|| {
            if SIGNAL
                .compare_exchange(0, SIGINT, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                std::process::exit(128 + SIGINT);
            }
            CANCEL.store(true, Ordering::SeqCst);
        });
    }
}

/// The cancel flag, for work that polls it (the render's tiles).
pub fn flag() -> &'static AtomicBool {
    &CANCEL
}

/// The signal received, if any.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The exit code of a command stopped by `signal`.
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}

/// An error that stops the command when a signal was received: it names the signal and the
/// outputs of `outputs` that are not written (the caller drops `outputs`, which removes
/// their temporary files).
pub fn check(outputs: &OutputSet) -> Result<()> {
    let Some(signal) = received() else {
        return Ok(());
    };
    let name = match signal {
        SIGINT => "SIGINT".to_string(),
        SIGTERM => "SIGTERM".to_string(),
        s => format!("signal {s}"),
    };
    let targets: Vec<String> = outputs.targets().map(|p| p.display().to_string()).collect();
    Err(Error::Other(if targets.is_empty() {
        format!("interrupted by {name}")
    } else {
        format!("interrupted by {name}: not written: {}", targets.join(", "))
    }))
}
