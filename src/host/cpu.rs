//! The host CPU: its name for the speed reports, and the proof that it has the features
//! the AVX2 builds enable.

/// The CPU's name, for the reports that give this host's emulation speed: on x86-64 the
/// processor brand string of CPUID leaves `0x8000_0002..=0x8000_0004` (what Linux shows as
/// `model name`), else, or where the CPU has none, the architecture's name. Speed figures
/// on these shared machines only compare within one CPU (`docs/performance.md`), so every
/// report that gives them says which.
pub fn cpu_name() -> String {
    #[cfg(target_arch = "x86_64")]
    if let Some(name) = x86_brand_string() {
        return name;
    }
    std::env::consts::ARCH.to_string()
}

/// The 48-byte brand string, up to its first NUL, without surrounding spaces (Intel pads it
/// at the front); `None` when the CPU has no such leaves or the string is empty.
#[cfg(target_arch = "x86_64")]
fn x86_brand_string() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    const FIRST: u32 = 0x8000_0002;
    const LAST: u32 = 0x8000_0004;
    if __cpuid(0x8000_0000).eax < LAST {
        return None;
    }
    let mut bytes = Vec::with_capacity(48);
    for leaf in FIRST..=LAST {
        let r = __cpuid(leaf);
        for word in [r.eax, r.ebx, r.ecx, r.edx] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let name = String::from_utf8_lossy(&bytes[..end]).trim().to_string();
    (!name.is_empty()).then_some(name)
}

/// Proof that this CPU has AVX2 and every other feature of [`Avx2::FEATURES`]; only
/// [`Avx2::detect`] makes one. Code compiled for AVX2 runs through it ([`Avx2::run`]), so
/// holding one is what makes the kernels that take it safe to call. (A type with no values
/// off x86-64.)
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx2 {
    _proof: (),
}

/// Proof that this CPU has AVX2: never made off x86-64.
#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Avx2 {}

/// Work run compiled with the AVX2 features ([`Avx2::run`]). Implementations mark `run`
/// `#[inline(always)]`, so that it is compiled inside the entry point, with its features.
pub trait Avx2Kernel {
    type Output;

    fn run(self) -> Self::Output;
}

impl Avx2 {
    /// Every target feature the AVX2 builds of the crate enable: the entry points
    /// ([`Avx2::run`]) enable all of them, and every other `#[target_feature]` a subset
    /// (`tests/target_features.rs` checks this); [`Avx2::detect`] checks them all.
    pub const FEATURES: [&'static str; 6] = ["avx", "avx2", "bmi1", "bmi2", "lzcnt", "popcnt"];

    /// The token, when the CPU has every one of [`Self::FEATURES`].
    pub fn detect() -> Option<Avx2> {
        #[cfg(target_arch = "x86_64")]
        {
            let all = std::is_x86_feature_detected!("avx")
                && std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("bmi1")
                && std::is_x86_feature_detected!("bmi2")
                && std::is_x86_feature_detected!("lzcnt")
                && std::is_x86_feature_detected!("popcnt");
            all.then_some(Avx2 { _proof: () })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// Runs `kernel` compiled with every one of [`Self::FEATURES`] (inlined into a caller
    /// that has them too).
    #[inline(always)]
    pub fn run<K: Avx2Kernel>(self, kernel: K) -> K::Output {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `self` proves every feature `with_avx2` enables.
            unsafe { with_avx2(kernel) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = kernel;
            match self {}
        }
    }

    /// [`Self::run`], never inlined: for rarely taken work that should not grow its
    /// caller's code.
    #[inline(always)]
    pub fn run_out_of_line<K: Avx2Kernel>(self, kernel: K) -> K::Output {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `self` proves every feature `with_avx2_out_of_line` enables.
            unsafe { with_avx2_out_of_line(kernel) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = kernel;
            match self {}
        }
    }
}

/// `kernel` compiled with every one of [`Avx2::FEATURES`].
///
/// # Safety
/// The CPU must have every feature enabled here (an [`Avx2`] token proves it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline]
unsafe fn with_avx2<K: Avx2Kernel>(kernel: K) -> K::Output {
    kernel.run()
}

/// [`with_avx2`], never inlined.
///
/// # Safety
/// As [`with_avx2`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,avx2,bmi1,bmi2,lzcnt,popcnt")]
#[inline(never)]
unsafe fn with_avx2_out_of_line<K: Avx2Kernel>(kernel: K) -> K::Output {
    kernel.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux reads the same CPUID leaves for `/proc/cpuinfo`'s `model name`: a second
    /// reading of the brand string, by other code.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn the_cpu_name_is_the_kernels_model_name() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            return;
        };
        let Some(model) = info
            .lines()
            .find_map(|l| l.strip_prefix("model name")?.trim_start().strip_prefix(':'))
        else {
            return;
        };
        assert_eq!(cpu_name(), model.trim());
    }

    #[test]
    fn the_cpu_name_is_never_empty() {
        assert!(!cpu_name().trim().is_empty());
    }

    /// The token exists exactly when the CPU reports every feature, as the standard
    /// library's detection sees them one by one.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_token_exists_exactly_when_every_feature_is_there() {
        let each = Avx2::FEATURES.iter().all(|f| match *f {
            "avx" => std::is_x86_feature_detected!("avx"),
            "avx2" => std::is_x86_feature_detected!("avx2"),
            "bmi1" => std::is_x86_feature_detected!("bmi1"),
            "bmi2" => std::is_x86_feature_detected!("bmi2"),
            "lzcnt" => std::is_x86_feature_detected!("lzcnt"),
            "popcnt" => std::is_x86_feature_detected!("popcnt"),
            other => panic!("unknown feature {other}"),
        });
        assert_eq!(Avx2::detect().is_some(), each);
    }
}
