//! Fixed-width machine words (1, 2, 4 or 8 bytes) as the packer sees them.
//!
//! Words are read and written little-endian, whatever the host, so a compressed chunk
//! decodes to the same bytes on every platform.

use std::fmt::Debug;
use std::ops::{BitAnd, BitOr, BitXor};

/// An unsigned word the predictive packer works on.
pub trait Word:
    Copy
    + Debug
    + Default
    + Ord
    + BitXor<Output = Self>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + Send
    + Sync
    + 'static
{
    /// Size of the word in bytes.
    const BYTES: usize;
    /// The all-ones word.
    const ONES: Self;
    /// Reads a word from the first `BYTES` bytes of `bytes` (little-endian).
    fn load(bytes: &[u8]) -> Self;
    /// Writes the word into the first `BYTES` bytes of `out` (little-endian).
    fn store(self, out: &mut [u8]);
    /// Number of leading (most significant) zero bytes.
    fn leading_zero_bytes(self) -> u32;
    /// Logical right shift that yields zero when `bits` is the full width or more.
    fn shr_or_zero(self, bits: u32) -> Self;
    /// Width in bits.
    const BITS: u32;
    /// The word zero-extended to 64 bits.
    fn to_u64(self) -> u64;
    /// The low `BITS` bits of `v`.
    fn from_u64(v: u64) -> Self;
    /// Wrapping addition.
    fn wrapping_add(self, other: Self) -> Self;
    /// Wrapping subtraction.
    fn wrapping_sub(self, other: Self) -> Self;
    /// Rotates left by one bit (moves a float's sign bit to the least significant bit).
    fn rotate_left_one(self) -> Self;
    /// Rotates right by one bit (inverse of `rotate_left_one`).
    fn rotate_right_one(self) -> Self;
    /// Folds a two's complement difference so small magnitudes of either sign become
    /// small unsigned values: 0, -1, 1, -2, ... map to 0, 1, 2, 3, ...
    fn zigzag(self) -> Self;
    /// Inverse of `zigzag`.
    fn unzigzag(self) -> Self;
    /// Number of significant bits (0 for zero).
    fn bit_length(self) -> u32;
    /// Runs `f` on this thread's reusable buffer of words (empty or holding whatever
    /// the last user left), so hot paths do not allocate, and page-fault in, a fresh
    /// tile-sized buffer per call. A nested call gets a fresh buffer. A buffer grown
    /// beyond 16 MiB (a whole large chunk's words) is released after the call.
    fn with_scratch<R>(f: impl FnOnce(&mut Vec<Self>) -> R) -> R;
}

/// Most bytes of a thread's scratch buffer kept for the next call (see
/// [`Word::with_scratch`]): every tile's words fit, while a buffer that grew to a whole
/// large chunk (scaled integers) goes back to the system instead of staying with the
/// thread for good.
const SCRATCH_KEPT_BYTES: usize = 16 << 20;

/// Releases `buffer` when it holds more than [`SCRATCH_KEPT_BYTES`] of capacity.
fn release_if_large<T>(buffer: &mut Vec<T>) {
    if buffer.capacity() * std::mem::size_of::<T>() > SCRATCH_KEPT_BYTES {
        *buffer = Vec::new();
    }
}

macro_rules! impl_word {
    ($t:ty) => {
        impl Word for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const ONES: Self = <$t>::MAX;
            #[inline(always)]
            fn load(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(&bytes[..Self::BYTES]);
                <$t>::from_le_bytes(raw)
            }
            #[inline(always)]
            fn store(self, out: &mut [u8]) {
                out[..Self::BYTES].copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn leading_zero_bytes(self) -> u32 {
                self.leading_zeros() / 8
            }
            #[inline(always)]
            fn shr_or_zero(self, bits: u32) -> Self {
                self.checked_shr(bits).unwrap_or(0)
            }
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn to_u64(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            #[inline(always)]
            fn wrapping_sub(self, other: Self) -> Self {
                <$t>::wrapping_sub(self, other)
            }
            #[inline(always)]
            fn rotate_left_one(self) -> Self {
                self.rotate_left(1)
            }
            #[inline(always)]
            fn rotate_right_one(self) -> Self {
                self.rotate_right(1)
            }
            #[inline(always)]
            fn zigzag(self) -> Self {
                (self << 1) ^ (0 as $t).wrapping_sub(self >> (<$t>::BITS - 1))
            }
            #[inline(always)]
            fn unzigzag(self) -> Self {
                (self >> 1) ^ (0 as $t).wrapping_sub(self & 1)
            }
            #[inline(always)]
            fn bit_length(self) -> u32 {
                <$t>::BITS - self.leading_zeros()
            }
            fn with_scratch<R>(f: impl FnOnce(&mut Vec<Self>) -> R) -> R {
                thread_local! {
                    static SCRATCH: std::cell::RefCell<Vec<$t>> =
                        const { std::cell::RefCell::new(Vec::new()) };
                }
                SCRATCH.with(|cell| match cell.try_borrow_mut() {
                    Ok(mut buffer) => {
                        let result = f(&mut buffer);
                        release_if_large(&mut buffer);
                        result
                    }
                    Err(_) => f(&mut Vec::new()),
                })
            }
        }
    };
}

impl_word!(u8);
impl_word!(u16);
impl_word!(u32);
impl_word!(u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_store_is_little_endian() {
        let mut buf = [0u8; 4];
        0x1122_3344u32.store(&mut buf);
        assert_eq!(buf, [0x44, 0x33, 0x22, 0x11]);
        assert_eq!(u32::load(&buf), 0x1122_3344);
    }

    #[test]
    fn leading_zero_bytes_counts_whole_bytes() {
        assert_eq!(0u32.leading_zero_bytes(), 4);
        assert_eq!(0x00ff_ffffu32.leading_zero_bytes(), 1);
        assert_eq!(0x0080_0000u32.leading_zero_bytes(), 1);
        assert_eq!(0x0000_0001u64.leading_zero_bytes(), 7);
        assert_eq!(0x80u8.leading_zero_bytes(), 0);
    }

    #[test]
    fn zigzag_folds_signs_and_inverts() {
        let cases = [
            (0u32, 0u32),
            (u32::MAX, 1),
            (1, 2),
            (u32::MAX - 1, 3),
            (2, 4),
        ];
        for (v, z) in cases {
            assert_eq!(v.zigzag(), z);
            assert_eq!(z.unzigzag(), v);
        }
        for v in [0u64, 1, u64::MAX, 1 << 63, 12345] {
            assert_eq!(v.zigzag().unzigzag(), v);
        }
        assert_eq!(0x8000_0001u32.rotate_left_one(), 3);
        assert_eq!(3u32.rotate_right_one(), 0x8000_0001);
        assert_eq!(0u16.bit_length(), 0);
        assert_eq!(5u8.bit_length(), 3);
    }

    #[test]
    fn shr_or_zero_saturates() {
        assert_eq!(0xffu8.shr_or_zero(8), 0);
        assert_eq!(u32::MAX.shr_or_zero(8), 0x00ff_ffff);
    }

    #[test]
    fn scratch_is_reused_per_thread_and_fresh_when_nested() {
        u32::with_scratch(|buffer| {
            buffer.clear();
            buffer.extend([1, 2, 3]);
        });
        u32::with_scratch(|buffer| {
            assert_eq!(buffer[..], [1, 2, 3]);
            u32::with_scratch(|inner| assert!(inner.is_empty()));
        });
        std::thread::spawn(|| u32::with_scratch(|buffer| assert!(buffer.is_empty())))
            .join()
            .unwrap();
        u64::with_scratch(|buffer| assert!(buffer.is_empty()));
        // A buffer grown beyond the kept size is released after the call.
        let kept_words = SCRATCH_KEPT_BYTES / 4;
        u32::with_scratch(|buffer| buffer.resize(kept_words, 7));
        u32::with_scratch(|buffer| {
            assert_eq!(buffer.len(), kept_words);
            buffer.push(7);
        });
        u32::with_scratch(|buffer| assert_eq!(buffer.capacity(), 0));
    }
}
