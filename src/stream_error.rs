//! The typed error of the decoders of coded data: the residual coders, the bit readers
//! under them, the tile header and the tiling a chunk header records.
//!
//! Each variant says what kind of inconsistency was found and carries the values that
//! describe it; its message ([`std::fmt::Display`]) is the text the public
//! [`crate::Error`] reports (after the block, or in the header, it concerns). Names of
//! coders and of parts of a coding are `&'static str`: building an error allocates
//! nothing but the rare message of a general-purpose decompressor and the box of
//! [`StreamError::InGroup`].

use std::borrow::Cow;

/// An inconsistency in coded data: input that no encoder writes, found while parsing or
/// decoding it.
///
/// The variants come in kinds: the input ends too early, it does not end where the
/// coding does, bits that must be zero are not, a field holds a value outside the
/// format, a field holds a valid value that the encoder never writes (a non-canonical
/// coding), a general-purpose decompressor refuses its block, and the group of values
/// an error was found in. Variants holding a single `&'static str` are the kinds whose
/// sites each have a fixed message; the others carry the values their message shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The input ends before a part of the coding; the message names that part.
    #[error("{0}")]
    Truncated(&'static str),
    /// A tile payload shorter than the tile header.
    #[error("{len} bytes, no tile header")]
    NoTileHeader {
        /// Bytes in the payload.
        len: usize,
    },
    /// Too few bytes for the prefix codes of a tile's words (leading-zero-byte coder).
    #[error("{len} bytes cannot hold the prefix codes of {words} words")]
    PrefixCodesTruncated {
        /// Bytes in the input.
        len: usize,
        /// Words to decode.
        words: usize,
    },
    /// The input ends inside the group of values that starts at byte `pos` (bitplane
    /// coder).
    #[error("bitplane: input truncated in the group at byte {pos}")]
    GroupTruncated {
        /// Byte at which the group starts.
        pos: usize,
    },
    /// The codes of group `group` read past the end of the input (Rice coder).
    #[error("rice: stream truncated in group {group} ({len} bytes)")]
    RiceTruncated {
        /// Index of the group of values.
        group: usize,
        /// Bytes in the input.
        len: usize,
    },
    /// A rANS stream longer than the bytes left for it.
    #[error("rANS stream of {len} bytes overruns the {left} left")]
    RansOverrun {
        /// Length the coding declares.
        len: usize,
        /// Bytes left in the input.
        left: usize,
    },

    /// The reads of a bit stream did not end in its last byte.
    #[error("{what} ends at byte {used} of {len}")]
    BitStreamEnd {
        /// The stream.
        what: &'static str,
        /// Whole bytes the reads took.
        used: usize,
        /// Bytes in the stream.
        len: usize,
    },
    /// A rANS stream that did not end at its last byte.
    #[error("rANS stream of {len} bytes ended at byte {pos}")]
    RansEnd {
        /// Bytes in the stream.
        len: usize,
        /// Byte after the last one the decoder read (past `len` when it ran out).
        pos: usize,
    },
    /// Bytes after the last coded value (patched and Rice coders).
    #[error("{coder}: {} bytes after the coded values ({used} of {len} used)", .len - .used)]
    TrailingBytes {
        /// The coder.
        coder: &'static str,
        /// Bytes the coded values take (fewer than `len`).
        used: usize,
        /// Bytes in the input.
        len: usize,
    },
    /// Bytes after the last group of values (bitplane coder).
    #[error("bitplane: {extra} trailing bytes after the last group")]
    TrailingGroupBytes {
        /// Bytes after the last group.
        extra: usize,
    },
    /// Bytes after the Zstandard frame, which must be the whole coding.
    #[error("zstd frame of {size} bytes followed by {extra} more")]
    TrailingFrameBytes {
        /// Bytes in the frame.
        size: usize,
        /// Bytes after it.
        extra: usize,
    },
    /// A general-purpose block that decodes to another size than the tile's.
    #[error("decodes to {got} bytes, the tile holds {expected}")]
    DecodedLength {
        /// Bytes the block decodes to.
        got: usize,
        /// Bytes of the tile's values.
        expected: usize,
    },
    /// A residual stream whose length is not the one its prefix codes describe
    /// (leading-zero-byte coder).
    #[error("residual stream holds {got} bytes, its prefix codes describe {expected}")]
    ResidualLength {
        /// Bytes in the residual stream.
        got: usize,
        /// Bytes the prefix codes describe.
        expected: usize,
    },

    /// Padding bits or bytes that the format fixes at zero are not; the message names
    /// where.
    #[error("{0}")]
    NonzeroPadding(&'static str),

    /// A field holds a value outside the format; the message names the field.
    #[error("{0}")]
    Invalid(&'static str),
    /// An id that names nothing (a predictor, residual map, coder or coding kind).
    #[error("unknown {what} {id}")]
    UnknownId {
        /// What the id should name.
        what: &'static str,
        /// The id.
        id: u8,
    },
    /// A word width the bitplane coder has no layout for.
    #[error("bitplane: unsupported word width {bits}")]
    UnsupportedWordWidth {
        /// Bits in a word.
        bits: u32,
    },
    /// A field width or parameter too large for the words (patched and Rice coders).
    #[error("{what} {value} for {word_bits}-bit words")]
    WidthForWord {
        /// The coder and field.
        what: &'static str,
        /// The value found.
        value: u32,
        /// Bits in a word.
        word_bits: u32,
    },
    /// An exception width of zero, or one that leaves no room for the low bits of the
    /// words (patched coder).
    #[error("patched: exception width {width} above width {low} for {word_bits}-bit words")]
    ExceptionWidth {
        /// Bits of the exceptions' high parts.
        width: u32,
        /// Bits of the low parts.
        low: u32,
        /// Bits in a word.
        word_bits: u32,
    },
    /// A context configuration outside the ranges the format allows.
    #[error("invalid context configuration {buckets}/{split}/{base}/{token_bits}")]
    ContextConfig {
        /// Number of buckets of neighbouring bit lengths.
        buckets: u8,
        /// Split of each bucket.
        split: u8,
        /// Bit length of the first bucket.
        base: u8,
        /// Bits per token.
        token_bits: u8,
    },
    /// A float-field window (coder 10) outside the ranges the format allows.
    #[error("invalid float window: {token_bits} token bits, {count} exponents from {emin} for {word_bits}-bit words")]
    FloatWindow {
        /// Mantissa bits per token.
        token_bits: u8,
        /// The first exponent field of the window.
        emin: u16,
        /// Exponent fields in the window.
        count: u8,
        /// Bits in a word.
        word_bits: u32,
    },
    /// A rANS table whose symbol range is empty or outside the alphabet.
    #[error("table range {lo}..={hi} outside {alphabet} tokens")]
    TableRange {
        /// First symbol of the range.
        lo: usize,
        /// Last symbol of the range.
        hi: usize,
        /// Tokens in the alphabet.
        alphabet: usize,
    },
    /// A Huffman code for more symbols than the decoder's table holds.
    #[error("huffman alphabet of {symbols} symbols exceeds {limit}")]
    HuffmanAlphabet {
        /// Symbols given.
        symbols: usize,
        /// Most symbols allowed.
        limit: usize,
    },
    /// A Huffman code length above the longest allowed.
    #[error("huffman code length {len} of symbol {symbol} exceeds {limit}")]
    HuffmanCodeLength {
        /// The length.
        len: u8,
        /// The symbol it belongs to.
        symbol: usize,
        /// Longest length allowed.
        limit: u32,
    },
    /// Tile dimensions (planes x rows x columns) that no decoder accepts.
    #[error("tile dimensions {planes}x{rows}x{cols} {fault}")]
    BadTiling {
        /// Planes per tile.
        planes: usize,
        /// Rows per tile.
        rows: usize,
        /// Columns per tile.
        cols: usize,
        /// What is wrong with them.
        fault: TilingFault,
    },

    /// A valid-looking field the encoder never writes; the message names it.
    #[error("{0}")]
    NonCanonical(&'static str),
    /// Listed exception positions not in increasing order, or past the group's end
    /// (patched coder).
    #[error("patched: exception position {position} out of order")]
    ExceptionOrder {
        /// The position found.
        position: u64,
    },
    /// An exception width wider than the widest high part it holds (patched coder).
    #[error("patched: exception width {width} wider than its values")]
    ExceptionTooWide {
        /// The width.
        width: u32,
    },

    /// A general-purpose decompressor refused the block.
    #[error("{what}: {message}")]
    Backend {
        /// The block's format.
        what: &'static str,
        /// The decompressor's message.
        message: Cow<'static, str>,
    },

    /// An error found in one group of values.
    #[error("{inner} in group {group}")]
    InGroup {
        /// Index of the group.
        group: usize,
        /// The error.
        inner: Box<StreamError>,
    },
}

impl StreamError {
    /// This error, found in the group of values number `group`.
    #[cold]
    pub fn in_group(self, group: usize) -> StreamError {
        StreamError::InGroup {
            group,
            inner: Box::new(self),
        }
    }
}

/// What is wrong with recorded tile dimensions (see [`StreamError::BadTiling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TilingFault {
    /// A dimension is zero.
    #[error("have a zero")]
    ZeroDimension,
    /// Tiles of several planes that do not hold whole planes.
    #[error("span several planes but not whole ones")]
    PartialPlanes,
    /// Tiles of more words than a decoder accepts.
    #[error("hold more than {limit} words")]
    TooManyWords {
        /// Most words in a tile.
        limit: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_their_values() {
        let cases = [
            (
                StreamError::TrailingBytes {
                    coder: "patched",
                    used: 1,
                    len: 2,
                },
                "patched: 1 bytes after the coded values (1 of 2 used)",
            ),
            (
                StreamError::Invalid("rice: unary code longer than the escape").in_group(3),
                "rice: unary code longer than the escape in group 3",
            ),
            (
                StreamError::BadTiling {
                    planes: 2,
                    rows: 3,
                    cols: 4,
                    fault: TilingFault::TooManyWords { limit: 5 },
                },
                "tile dimensions 2x3x4 hold more than 5 words",
            ),
            (
                StreamError::Backend {
                    what: "zstd frame",
                    message: Cow::Borrowed("truncated or invalid"),
                },
                "zstd frame: truncated or invalid",
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
    }
}
