//! Residual coders: how a tile's residual words become bytes.

pub mod bitplane;
pub mod lzb;
pub mod rice;

use crate::word::Word;

/// A residual coder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coder {
    /// Seed 000: 2-bit (3-bit for 8-byte words) leading-zero-byte prefixes + bytes.
    LeadingZeroBytes,
    /// Seed 001 / MPC: bit-matrix transposition of 32 (64) residuals, zero planes
    /// dropped, a bitmap per group.
    Bitplane,
    /// Rice codes with a parameter chosen per group of 32 residuals.
    Rice,
}

impl Coder {
    /// Every coder, in id order.
    pub const ALL: [Coder; 3] = [Coder::LeadingZeroBytes, Coder::Bitplane, Coder::Rice];

    /// The coder's id in cd_values and tile headers (never 0, which means "default").
    pub fn id(self) -> u8 {
        match self {
            Coder::LeadingZeroBytes => 1,
            Coder::Bitplane => 2,
            Coder::Rice => 3,
        }
    }

    /// The coder with id `id`.
    pub fn from_id(id: u32) -> Option<Coder> {
        Coder::ALL.into_iter().find(|c| u32::from(c.id()) == id)
    }

    /// A short name for tables and messages.
    pub fn name(self) -> &'static str {
        match self {
            Coder::LeadingZeroBytes => "lzbytes",
            Coder::Bitplane => "bitplane",
            Coder::Rice => "rice",
        }
    }

    /// Appends the coding of `values` to `out`.
    pub fn encode<T: Word>(self, values: &[T], out: &mut Vec<u8>) {
        match self {
            Coder::LeadingZeroBytes => lzb::encode(values, out),
            Coder::Bitplane => bitplane::encode(values, out),
            Coder::Rice => rice::encode(values, out),
        }
    }

    /// Decodes `out.len()` values from `input`, which must be exactly their coding.
    pub fn decode<T: Word>(self, input: &[u8], out: &mut [T]) -> Result<(), String> {
        match self {
            Coder::LeadingZeroBytes => lzb::decode(input, out),
            Coder::Bitplane => bitplane::decode(input, out),
            Coder::Rice => rice::decode(input, out),
        }
    }

    /// Estimated coded size of `values` in bits, to choose between candidates.
    pub fn estimate_bits<T: Word>(self, values: &[T]) -> u64 {
        match self {
            Coder::LeadingZeroBytes => lzb::encoded_bits(values),
            Coder::Bitplane => 8 * bitplane::encoded_len(values) as u64,
            Coder::Rice => rice::estimate_bits(values),
        }
    }

    /// Fewest bytes the coding of `n` values of `bytes`-byte words can take: bounds
    /// the decoded size of a hostile chunk before anything is allocated.
    pub fn min_encoded_len(self, n: usize, bytes: usize) -> usize {
        match self {
            Coder::LeadingZeroBytes => lzb::min_encoded_len(n, bytes),
            // One bitmap of `8 * bytes` bits per group of `8 * bytes` values.
            Coder::Bitplane => n.div_ceil(8 * bytes) * bytes,
            // A 6-bit header per group of 32 values.
            Coder::Rice => (n.div_ceil(32) * 6).div_ceil(8),
        }
    }
}
