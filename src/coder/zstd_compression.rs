//! Zstandard compression through a context kept per thread.
//!
//! Making a compression context asks the CPU for its features (`cpuid`), which in a
//! virtual machine traps to the hypervisor: tens of microseconds a frame, more than
//! coding a small chunk's frames takes. A thread's frames of up to
//! [`KEPT_CONTEXT_MAX_BYTES`] reuse one context instead, reset (session and parameters)
//! before each, so every frame is the one a fresh context codes at its level; larger
//! frames, for which the cost is small, get a fresh context, so the kept one never holds
//! the tables of a large frame (megabytes at level 19) for the rest of the thread's life.

use std::cell::RefCell;

use zstd::bulk::Compressor;
use zstd::zstd_safe::{CParameter, ResetDirective};

thread_local! {
    /// The thread's compression context, made on first use.
    static COMPRESSOR: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
}

/// Frames of up to this many bytes are coded with the thread's kept context.
pub const KEPT_CONTEXT_MAX_BYTES: usize = 128 << 10;

/// `bytes` as one Zstandard frame at `level`, with its content size.
pub fn compress(bytes: &[u8], level: i32) -> Vec<u8> {
    const INFALLIBLE: &str = "zstd compresses any input into a growable buffer";
    if bytes.len() > KEPT_CONTEXT_MAX_BYTES {
        return zstd::bulk::compress(bytes, level).expect(INFALLIBLE);
    }
    COMPRESSOR.with(|cell| {
        // zstd never calls back into this module, so the context is never in use
        // further up this thread's stack; were it, a fresh context does the same.
        let Ok(mut kept) = cell.try_borrow_mut() else {
            return zstd::bulk::compress(bytes, level).expect(INFALLIBLE);
        };
        let compressor = match kept.as_mut() {
            Some(c) => c,
            None => kept.insert(Compressor::new(level).expect(INFALLIBLE)),
        };
        compressor
            .context_mut()
            .reset(ResetDirective::SessionAndParameters)
            .expect("a context resets between frames");
        compressor
            .set_parameter(CParameter::CompressionLevel(level))
            .expect(INFALLIBLE);
        compressor.compress(bytes).expect(INFALLIBLE)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coder::testing::matchable_bytes as sample;

    #[test]
    fn a_kept_context_codes_each_frame_as_a_fresh_one() {
        // Levels and sizes in an order that changes the context's tables between
        // frames: larger after smaller, a fast strategy after an optimal one.
        for (i, (level, len)) in [
            (19, 100_000),
            (3, 40),
            (12, 70_000),
            (19, 5),
            (1, 1 << 20),
            (3, 0),
            (19, KEPT_CONTEXT_MAX_BYTES),
            (19, 9_000),
            (-5, 4096),
        ]
        .into_iter()
        .enumerate()
        {
            let bytes = sample(i as u64, len);
            let kept = compress(&bytes, level);
            assert_eq!(
                kept,
                zstd::bulk::compress(&bytes, level).unwrap(),
                "level {level}, {len} bytes"
            );
            assert_eq!(zstd::bulk::decompress(&kept, len).unwrap(), bytes);
        }
    }
}
