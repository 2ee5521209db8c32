//! Zstandard decompression through a context kept per thread.
//!
//! A fresh decompression context is allocated (and its tables set up) for every frame;
//! a thread's tiles reuse one instead (as compression does, see `zstd_compression`).

use std::cell::RefCell;
use std::io;

use zstd::bulk::Decompressor;

thread_local! {
    /// The thread's decompression context, made on first use.
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// Decompresses the Zstandard frame(s) of `input` into `out`, returning how many bytes
/// they decoded to (an error when more than `out.len()`, or when a frame is corrupt).
pub fn decompress_to(input: &[u8], out: &mut [u8]) -> io::Result<usize> {
    DECOMPRESSOR.with(|cell| {
        // zstd never calls back into this module, so the context is never in use
        // further up this thread's stack; were it, a fresh context does the same.
        let Ok(mut kept) = cell.try_borrow_mut() else {
            return zstd::bulk::decompress_to_buffer(input, out);
        };
        let decompressor = match kept.as_mut() {
            Some(d) => d,
            None => kept.insert(Decompressor::new()?),
        };
        decompressor.decompress_to_buffer(input, out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coder::testing::matchable_bytes as sample;

    #[test]
    fn one_context_decodes_frame_after_frame() {
        for (k, &(level, len)) in [(12, 300_000), (3, 5_000), (12, 0), (1, 1 << 20), (19, 17)]
            .iter()
            .enumerate()
        {
            let bytes = sample(k as u64, len);
            let frame = zstd::bulk::compress(&bytes, level).unwrap();
            let mut out = vec![0u8; len + 1];
            assert_eq!(decompress_to(&frame, &mut out).unwrap(), len, "case {k}");
            assert_eq!(&out[..len], &bytes[..], "case {k}");
        }
    }

    #[test]
    fn a_failed_frame_leaves_the_context_working() {
        let bytes = sample(1, 10_000);
        let frame = zstd::bulk::compress(&bytes, 12).unwrap();
        assert!(decompress_to(&frame, &mut [0u8; 9_999]).is_err());
        assert!(decompress_to(&frame[..frame.len() - 1], &mut vec![0u8; 10_000]).is_err());
        let mut corrupt = frame.clone();
        let middle = corrupt.len() / 2;
        corrupt[middle] ^= 0x55;
        let _ = decompress_to(&corrupt, &mut vec![0u8; 10_000]);
        let mut out = vec![0u8; 10_000];
        assert_eq!(decompress_to(&frame, &mut out).unwrap(), 10_000);
        assert_eq!(out, bytes);
    }
}
