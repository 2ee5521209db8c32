//! The codec's error type: every message names karoo and says what was wrong.

use crate::stream_error::StreamError;

/// Everything that can go wrong when compressing or decompressing a chunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller's parameters do not describe the data (compress side).
    #[error("karoo: invalid parameters: {0}")]
    InvalidParams(String),
    /// The input is shorter than its own header says it must be.
    #[error("karoo: corrupt chunk: truncated ({0})")]
    Truncated(String),
    /// The input does not start with karoo's magic bytes.
    #[error("karoo: not a karoo chunk (bad magic bytes)")]
    BadMagic,
    /// The chunk was written by a newer, incompatible format version.
    #[error("karoo: unsupported chunk format version {0} (this build reads versions up to {1})")]
    UnsupportedVersion(u8, u8),
    /// The chunk uses a value (flag, id, element kind) this build does not know, which a
    /// later format revision may give a meaning: the chunk may be valid, for a newer karoo.
    #[error("karoo: unsupported chunk: {0} (written by a later karoo?)")]
    Unsupported(String),
    /// The chunk header does not match its checksum.
    #[error("karoo: corrupt chunk: header checksum mismatch")]
    HeaderChecksum,
    /// A header field has a value no encoder writes.
    #[error("karoo: corrupt chunk: {0}")]
    CorruptHeader(String),
    /// A block's encoded stream is inconsistent.
    #[error("karoo: corrupt chunk: block {index}: {reason}")]
    CorruptBlock {
        /// Index of the block in the chunk's block table.
        index: usize,
        /// What was inconsistent.
        reason: String,
    },
    /// The decoded bytes do not match the checksum recorded at compression.
    #[error("karoo: corrupt chunk: checksum mismatch (stored {stored:#018x}, decoded data gives {actual:#018x})")]
    ChecksumMismatch {
        /// Checksum stored in the chunk header.
        stored: u64,
        /// Checksum of the bytes that were decoded.
        actual: u64,
    },
    /// The chunk declares a decoded size larger than the caller allows.
    #[error("karoo: chunk declares {declared} decoded bytes, more than the {limit} expected")]
    TooLarge {
        /// Decoded size the header declares.
        declared: u64,
        /// Largest size the caller accepts.
        limit: u64,
    },
}

impl Error {
    /// The error for block `index`, whose coding has the inconsistency `reason`.
    /// An unknown id in the block is [`Error::Unsupported`]; anything else is
    /// [`Error::CorruptBlock`].
    pub(crate) fn corrupt_block(index: usize, reason: StreamError) -> Error {
        match reason {
            StreamError::UnknownId { .. } => Error::Unsupported(format!("block {index}: {reason}")),
            _ => Error::CorruptBlock {
                index,
                reason: reason.to_string(),
            },
        }
    }
}

/// Result type of the codec.
pub type Result<T> = std::result::Result<T, Error>;
