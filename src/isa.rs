//! CPU feature detection, in one place: which hand-written kernels the coders may run,
//! and [`vectorised`], which runs a plain Rust loop compiled for the widest vector
//! instructions the CPU has (AVX-512, AVX2, or the baseline), chosen at run time, so the
//! compiler's auto-vectorisation of simple loops (the predictions and the restores) uses
//! them without a build for one CPU.
//!
//! The environment variable `KAROO_ISA` caps what is used, read once per process:
//! `portable` runs the portable code only, `avx2` at most AVX2, `avx512` (or unset, or
//! anything else) whatever the CPU has. The output bytes are the same on every path;
//! the switch exists so the tests can run each path on one machine.

use std::sync::OnceLock;

/// Instruction-set levels, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The target's baseline: the portable code.
    Portable,
    /// AVX2.
    Avx2,
    /// AVX-512.
    Avx512,
}

/// What this process may use, detected once.
// Off x86_64 nothing asks for the kernels: they are never available there.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
struct Features {
    /// The widest level [`vectorised`] compiles for.
    loops: Level,
    /// AVX2 and POPCNT: the AVX2 kernels of patched packing and bit planes.
    avx2_kernels: bool,
    /// The AVX-512 subsets patched packing's AVX-512 kernels use.
    avx512_kernels: bool,
}

/// The level `KAROO_ISA` caps the process at.
fn cap() -> Level {
    match std::env::var("KAROO_ISA").as_deref() {
        Ok("portable") => Level::Portable,
        Ok("avx2") => Level::Avx2,
        _ => Level::Avx512,
    }
}

fn features() -> &'static Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    FEATURES.get_or_init(|| detect(cap()))
}

/// The features of this CPU, at most `cap`.
#[cfg(target_arch = "x86_64")]
fn detect(cap: Level) -> Features {
    use std::is_x86_feature_detected as has;
    let avx2_kernels = cap >= Level::Avx2 && has!("avx2") && has!("popcnt");
    let avx2_loops = avx2_kernels && has!("bmi1") && has!("bmi2") && has!("lzcnt");
    let avx512 = cap >= Level::Avx512 && avx2_loops && has!("avx512f") && has!("avx512bw");
    let avx512_loops = avx512 && has!("avx512dq") && has!("avx512vl");
    let avx512_kernels = avx512
        && has!("avx512cd")
        && has!("avx512vbmi")
        && has!("avx512vbmi2")
        && has!("avx512vpopcntdq")
        && has!("gfni");
    let loops = if avx512_loops {
        Level::Avx512
    } else if avx2_loops {
        Level::Avx2
    } else {
        Level::Portable
    };
    Features {
        loops,
        avx2_kernels,
        avx512_kernels,
    }
}

/// Off x86_64: the portable code only.
#[cfg(not(target_arch = "x86_64"))]
fn detect(_cap: Level) -> Features {
    Features {
        loops: Level::Portable,
        avx2_kernels: false,
        avx512_kernels: false,
    }
}

/// The widest level [`vectorised`] runs at.
pub fn level() -> Level {
    features().loops
}

/// Whether the AVX2 kernels may run (AVX2 and POPCNT present, not capped).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub fn avx2_kernels() -> bool {
    features().avx2_kernels
}

/// Whether patched packing's AVX-512 kernels may run (AVX-512 F, BW, CD, VBMI, VBMI2,
/// VPOPCNTDQ and GFNI with AVX2 present, not capped).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub fn avx512_kernels() -> bool {
    features().avx512_kernels
}

/// `f()`, compiled (where it is inlined into the call) for the widest vector
/// instructions this CPU has. Pass an `#[inline(always)]` closure and keep what it runs
/// `#[inline(always)]`: code that is not inlined into it runs as compiled for the
/// baseline. The result is the same on every level; only the speed differs.
#[inline(always)]
pub fn vectorised<R>(f: impl FnOnce() -> R) -> R {
    match level() {
        // SAFETY: the CPU has the level's features (detected by `detect`).
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { x86::with_avx512(f) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { x86::with_avx2(f) },
        _ => f(),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// # Safety
    ///
    /// The CPU must have the features enabled here.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,bmi1,bmi2,lzcnt,popcnt")]
    pub unsafe fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
        f()
    }

    /// # Safety
    ///
    /// The CPU must have the features enabled here.
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    pub unsafe fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test suite runs once per `KAROO_ISA` value: each must take effect, or the
    /// runs would all test the same path.
    #[test]
    fn the_isa_switch_caps_every_path() {
        match std::env::var("KAROO_ISA").as_deref() {
            Ok("portable") => {
                assert_eq!(level(), Level::Portable);
                assert!(!avx2_kernels() && !avx512_kernels());
            }
            Ok("avx2") => {
                assert!(level() <= Level::Avx2);
                assert!(!avx512_kernels());
            }
            _ => {}
        }
        assert_eq!(
            cap() == Level::Portable,
            std::env::var("KAROO_ISA").as_deref() == Ok("portable")
        );
    }
}
