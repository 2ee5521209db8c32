//! Running a plain Rust loop compiled for the widest vector instructions the CPU has
//! (AVX-512, AVX2, or the baseline), chosen at run time, so the compiler's
//! auto-vectorisation of simple loops (the predictions and the restores) uses
//! them without a build for one CPU.

/// The vector instructions [`vectorised`] compiles for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// AVX-512 F, BW, DQ and VL (with AVX2, BMI1/2, LZCNT and POPCNT).
    Avx512,
    /// AVX2 (with BMI1/2, LZCNT and POPCNT).
    Avx2,
    /// The target's baseline.
    Baseline,
}

/// The widest level this CPU runs.
fn level() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use std::is_x86_feature_detected as has;
        let avx2 = has!("avx2") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("popcnt");
        if avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
            return Level::Avx512;
        }
        if avx2 {
            return Level::Avx2;
        }
    }
    Level::Baseline
}

/// `f()`, compiled (where it is inlined into the call) for the widest vector
/// instructions this CPU has. Pass an `#[inline(always)]` closure and keep what it runs
/// `#[inline(always)]`: code that is not inlined into it runs as compiled for the
/// baseline. The result is the same on every level; only the speed differs.
#[inline(always)]
pub fn vectorised<R>(f: impl FnOnce() -> R) -> R {
    match level() {
        // SAFETY: the CPU has the level's features (detected by `level`).
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
