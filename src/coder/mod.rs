//! Residual coders: how a tile's residual words become bytes.

pub mod bitshuffled;
pub mod shuffled;
#[cfg(test)]
pub(crate) mod testing;
pub mod zstd_compression;
pub mod zstd_decompression;

use crate::archive::{
    banded, context, context_ans, context_bitplanes, context_huffman, dictionary, float_fields,
};
use crate::fast::{bitplane, leading_zero_bytes, patched, rice};
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// A residual coder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Coder {
    /// The MeerKAT predictive packer's leading-zero-byte scheme: 2-bit (3-bit for 8-byte
    /// words) leading-zero-byte prefixes + bytes.
    LeadingZeroBytes,
    /// MPC's bit planes: bit-matrix transposition of 32 (64) residuals, zero planes
    /// dropped, a bitmap per group.
    Bitplane,
    /// Rice codes with a parameter chosen per group of 32 residuals.
    Rice,
    /// Archive mode: bit-length tokens coded with static rANS, one table per context of
    /// neighbouring bit lengths, and the bits below the leading one raw.
    ContextAns,
    /// Archive mode's Huffman variant: the same tokens and contexts, one canonical
    /// length-limited Huffman code per context.
    ContextHuffman,
    /// Huffman value coding: words as indices into the tile's dictionary of
    /// at most 256 distinct values (context rANS when there are more).
    Dictionary,
    /// Fixed-width low bits per group of 32 residuals, the values that do not fit
    /// patched in from a bitmap or list of exceptions (fast mode's default).
    Patched,
    /// The values byte-shuffled and compressed as one LZ4 block: fast mode's general
    /// path for tiles prediction does not help.
    ShuffledLz4,
    /// The values byte-shuffled and compressed as one Zstandard frame: archive mode's
    /// general path.
    ShuffledZstd,
    /// Archive mode for values no predictor helps: tokens of a float's sign, exponent
    /// and top mantissa bits coded with static rANS, one table per context of
    /// neighbouring exponents, and the rest of the mantissa raw.
    FloatFields,
    /// Archive mode's coder for large tiles: the tokens, contexts and tables of
    /// [`Coder::ContextAns`] (or [`Coder::FloatFields`]), the rows cut into bands coded
    /// one residual of each in turn, each band with a rANS state of its own, so that a
    /// decoder follows 16 at once.
    Banded,
    /// The values bit-shuffled (bit planes, as the Bitshuffle filter does) and compressed
    /// as one LZ4 block: fast mode's general path for values with few significant bits
    /// spread over whole words (flags, counts, weights).
    BitshuffledLz4,
    /// Coder 12's bit planes compressed as one Zstandard frame: archive mode's general
    /// path for sparse tiles.
    BitshuffledZstd,
    /// Archive mode for sparse tiles: the bit planes with a set bit coded bit by bit with
    /// binary rANS under adaptive probabilities, one model per context of neighbouring
    /// bits.
    ContextBitplanes,
}

impl Coder {
    /// Every coder, in id order.
    pub const ALL: [Coder; 14] = [
        Coder::LeadingZeroBytes,
        Coder::Bitplane,
        Coder::Rice,
        Coder::ContextAns,
        Coder::ContextHuffman,
        Coder::Dictionary,
        Coder::Patched,
        Coder::ShuffledLz4,
        Coder::ShuffledZstd,
        Coder::FloatFields,
        Coder::Banded,
        Coder::BitshuffledLz4,
        Coder::BitshuffledZstd,
        Coder::ContextBitplanes,
    ];

    /// The coder's id in cd_values and tile headers (never 0, which means "default").
    pub fn id(self) -> u8 {
        match self {
            Coder::LeadingZeroBytes => 1,
            Coder::Bitplane => 2,
            Coder::Rice => 3,
            Coder::ContextAns => 4,
            Coder::ContextHuffman => 5,
            Coder::Dictionary => 6,
            Coder::Patched => 7,
            Coder::ShuffledLz4 => 8,
            Coder::ShuffledZstd => 9,
            Coder::FloatFields => 10,
            Coder::Banded => 11,
            Coder::BitshuffledLz4 => 12,
            Coder::BitshuffledZstd => 13,
            Coder::ContextBitplanes => 14,
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
            Coder::ContextAns => "ctx-ans",
            Coder::ContextHuffman => "ctx-huffman",
            Coder::Dictionary => "dictionary",
            Coder::Patched => "patched",
            Coder::ShuffledLz4 => "shuffled-lz4",
            Coder::ShuffledZstd => "shuffled-zstd",
            Coder::FloatFields => "float-fields",
            Coder::Banded => "banded-ans",
            Coder::BitshuffledLz4 => "bitshuffled-lz4",
            Coder::BitshuffledZstd => "bitshuffled-zstd",
            Coder::ContextBitplanes => "ctx-bitplanes",
        }
    }

    /// Appends the coding of `values`, laid out as `dims` says, to `out`.
    pub fn encode<T: Word>(self, values: &[T], dims: Dims, out: &mut Vec<u8>) {
        match self {
            Coder::LeadingZeroBytes => leading_zero_bytes::encode(values, out),
            Coder::Bitplane => bitplane::encode(values, out),
            Coder::Rice => rice::encode(values, out),
            Coder::ContextAns => context_ans::encode(values, dims, out),
            Coder::ContextHuffman => context_huffman::encode(values, dims, out),
            Coder::Dictionary => dictionary::encode(values, dims, out),
            Coder::Patched => patched::encode(values, out),
            Coder::ShuffledLz4 => shuffled::encode(values, shuffled::Backend::Lz4, out),
            Coder::ShuffledZstd => shuffled::encode(values, shuffled::Backend::Zstd, out),
            Coder::FloatFields => float_fields::encode(values, dims, out),
            Coder::Banded => banded::encode(values, dims, out),
            Coder::BitshuffledLz4 => bitshuffled::encode(values, shuffled::Backend::Lz4, out),
            Coder::BitshuffledZstd => bitshuffled::encode(values, shuffled::Backend::Zstd, out),
            Coder::ContextBitplanes => context_bitplanes::encode(values, dims, out),
        }
    }

    /// Decodes `out.len()` values, laid out as `dims` says, from `input`, which must be
    /// exactly their coding.
    pub fn decode<T: Word>(
        self,
        input: &[u8],
        dims: Dims,
        out: &mut [T],
    ) -> Result<(), StreamError> {
        match self {
            Coder::LeadingZeroBytes => leading_zero_bytes::decode(input, out),
            Coder::Bitplane => bitplane::decode(input, out),
            Coder::Rice => rice::decode(input, out),
            Coder::ContextAns => context_ans::decode(input, dims, out),
            Coder::ContextHuffman => context_huffman::decode(input, dims, out),
            Coder::Dictionary => dictionary::decode(input, dims, out),
            Coder::Patched => patched::decode(input, out),
            Coder::ShuffledLz4 => shuffled::decode(input, shuffled::Backend::Lz4, out),
            Coder::ShuffledZstd => shuffled::decode(input, shuffled::Backend::Zstd, out),
            Coder::FloatFields => float_fields::decode(input, dims, out),
            Coder::Banded => banded::decode(input, dims, out),
            Coder::BitshuffledLz4 => bitshuffled::decode(input, shuffled::Backend::Lz4, out),
            Coder::BitshuffledZstd => bitshuffled::decode(input, shuffled::Backend::Zstd, out),
            Coder::ContextBitplanes => context_bitplanes::decode(input, dims, out),
        }
    }

    /// Estimated coded size of `values` (laid out as `dims` says) in bits, to choose
    /// between candidates.
    pub fn estimate_bits<T: Word>(self, values: &[T], dims: Dims) -> u64 {
        match self {
            Coder::LeadingZeroBytes => leading_zero_bytes::encoded_bits(values),
            Coder::Bitplane => 8 * bitplane::encoded_len(values) as u64,
            Coder::Rice => rice::estimate_bits(values),
            Coder::Patched => patched::estimate_bits(values),
            Coder::ShuffledLz4 => shuffled::encoded_bits(values, shuffled::Backend::Lz4),
            Coder::ShuffledZstd => shuffled::encoded_bits(values, shuffled::Backend::Zstd),
            Coder::BitshuffledLz4 => bitshuffled::encoded_bits(values, shuffled::Backend::Lz4),
            Coder::BitshuffledZstd => bitshuffled::encoded_bits(values, shuffled::Backend::Zstd),
            Coder::ContextBitplanes => context_bitplanes::encoded_bits(values, dims),
            Coder::ContextAns | Coder::ContextHuffman | Coder::Banded => {
                context::estimate_bits(values, dims)
            }
            Coder::Dictionary => dictionary::estimate_bits(values)
                .unwrap_or_else(|| context::estimate_bits(values, dims)),
            Coder::FloatFields => float_fields::estimate_bits(values, dims),
        }
    }

    /// Fewest bytes the coding of `n` values of `bytes`-byte words can take: bounds
    /// the decoded size of a hostile chunk before anything is allocated.
    pub fn min_encoded_len(self, n: usize, bytes: usize) -> usize {
        match self {
            Coder::LeadingZeroBytes => leading_zero_bytes::min_encoded_len(n, bytes),
            // One bitmap of `8 * bytes` bits per group of `8 * bytes` values.
            Coder::Bitplane => n.div_ceil(8 * bytes) * bytes,
            // A 6-bit header per group of 32 values.
            Coder::Rice => (n.div_ceil(32) * 6).div_ceil(8),
            // Entropy coding has no per-value floor: the bound is per tile.
            Coder::ContextAns => context_ans::min_encoded_len(),
            Coder::ContextHuffman => context_huffman::min_encoded_len(),
            Coder::Dictionary => dictionary::min_encoded_len(),
            // A header byte per group of 32 values.
            Coder::Patched => patched::min_encoded_len(n),
            // General-purpose compressors have no per-value floor: the bound is per tile.
            Coder::ShuffledLz4 | Coder::ShuffledZstd => shuffled::min_encoded_len(),
            Coder::FloatFields => float_fields::min_encoded_len(),
            Coder::Banded => banded::min_encoded_len(),
            Coder::BitshuffledLz4 | Coder::BitshuffledZstd => bitshuffled::min_encoded_len(bytes),
            Coder::ContextBitplanes => context_bitplanes::min_encoded_len(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    /// The tile decoder hands coders a reused buffer: each must write every value.
    fn decodes_over_garbage<T: Word>(coder: Coder, values: &[T]) {
        let dims = testing::dims(7);
        let mut out = Vec::new();
        coder.encode(values, dims, &mut out);
        let mut back = vec![T::ONES; values.len()];
        coder.decode(&out, dims, &mut back).unwrap();
        assert_eq!(back, values, "{}", coder.name());
    }

    #[test]
    fn every_coder_writes_every_value() {
        let mut rng = SmallRng::seed_from_u64(21);
        for coder in Coder::ALL {
            for n in [1usize, 31, 32, 33, 700] {
                decodes_over_garbage::<u8>(coder, &vec![0; n]);
                decodes_over_garbage::<u16>(coder, &testing::laplace(&mut rng, n, 9));
                decodes_over_garbage::<u32>(coder, &vec![0; n]);
                decodes_over_garbage::<u32>(coder, &testing::laplace(&mut rng, n, 20));
                decodes_over_garbage::<u64>(coder, &vec![0; n]);
                decodes_over_garbage::<u64>(coder, &testing::laplace(&mut rng, n, 50));
            }
        }
    }
}
