//! The codec's error type: every message names karoo and says what was wrong.

use crate::format::READ_VERSIONS;
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
    /// The chunk's format version is one this build does not read: the chunk may be
    /// valid, written by a later karoo (docs/format.md, "Versions").
    #[error(
        "karoo: unsupported chunk format version {major}.{minor} (this build reads {}; \
         written by a later karoo?)",
        read_versions()
    )]
    UnsupportedVersion {
        /// The chunk's major format version.
        major: u8,
        /// The chunk's minor format version.
        minor: u8,
    },
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
    pub(crate) fn corrupt_block(index: usize, reason: StreamError) -> Error {
        Error::CorruptBlock {
            index,
            reason: reason.to_string(),
        }
    }
}

/// The versions this build reads, newest minor of each major: "1.0, 2.0, 3.0, 4.2".
fn read_versions() -> String {
    let versions: Vec<String> = READ_VERSIONS
        .iter()
        .map(|(major, minor)| format!("{major}.{minor}"))
        .collect();
    versions.join(", ")
}

/// Result type of the codec.
pub type Result<T> = std::result::Result<T, Error>;
