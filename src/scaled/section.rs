//! The scale section of a chunk of scaled integers (header flag bit 1): the group size
//! and each group's scale, between the chunk header and the tile payloads.
//!
//! Layout, little-endian:
//!
//! | size | field |
//! |---|---|
//! | 8 | group size in words (at least 16) |
//! | 4 | number of groups `g`: the chunk's words divided by the group size, rounded up |
//! | 4 | length `n` of the coded scales |
//! | n | the `g` scales (float64 bits, or all ones for a group kept as it is), byte-shuffled and compressed as one Zstandard frame |
//! | 8 | XXH3-64 of every byte of the section before it |

use crate::coder::shuffled::{self, Backend};
use crate::error::{Error, Result};

use super::scale;

/// Fewest words in a group: bounds the scale table to a sixteenth of the words.
pub const MIN_GROUP: usize = 16;

/// The scale section of a chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Scales {
    /// Words per group.
    pub group: usize,
    /// Bits of each group's scale.
    pub scales: Vec<u64>,
}

impl Scales {
    /// Appends the section to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&(self.group as u64).to_le_bytes());
        out.extend_from_slice(&(self.scales.len() as u32).to_le_bytes());
        let mut coded = Vec::new();
        shuffled::encode(&self.scales, Backend::Zstd, &mut coded);
        out.extend_from_slice(&(coded.len() as u32).to_le_bytes());
        out.extend_from_slice(&coded);
        let sum = twox_hash::XxHash3_64::oneshot(&out[start..]);
        out.extend_from_slice(&sum.to_le_bytes());
    }

    /// Parses and validates the section at the start of `input` for a chunk of `words`
    /// words; returns it and its length.
    pub fn parse(input: &[u8], words: u64) -> Result<(Scales, usize)> {
        let truncated =
            || Error::Truncated(format!("{} bytes, scale section cut short", input.len()));
        let fixed = input.get(..16).ok_or_else(truncated)?;
        let group = u64::from_le_bytes(fixed[..8].try_into().expect("8 bytes"));
        let count = u32::from_le_bytes(fixed[8..12].try_into().expect("4 bytes"));
        let coded_len = u32::from_le_bytes(fixed[12..16].try_into().expect("4 bytes")) as usize;
        let bad = |why: String| Err(Error::CorruptHeader(format!("scale section: {why}")));
        if group < MIN_GROUP as u64 {
            return bad(format!("group of {group} words, fewer than {MIN_GROUP}"));
        }
        // Encoders take a group from the shape's trailing sizes, so it is never longer
        // than the chunk; a longer one would make a group's byte length overflow.
        if group > words {
            return bad(format!("group of {group} words in a chunk of {words}"));
        }
        if u64::from(count) != words.div_ceil(group) {
            return bad(format!(
                "{count} scales for {words} words in groups of {group}"
            ));
        }
        let end = 16usize
            .checked_add(coded_len)
            .filter(|&end| end + 8 <= input.len())
            .ok_or_else(truncated)?;
        let sum = u64::from_le_bytes(input[end..end + 8].try_into().expect("8 bytes"));
        if twox_hash::XxHash3_64::oneshot(&input[..end]) != sum {
            return bad("checksum mismatch".into());
        }
        let mut scales = vec![0u64; count as usize];
        shuffled::decode(&input[16..end], Backend::Zstd, &mut scales)
            .map_err(|e| Error::CorruptHeader(format!("scale section: {e}")))?;
        if let Some(s) = scales.iter().find(|&&s| !scale::valid_scale(s)) {
            return bad(format!(
                "scale {} is not a positive finite number",
                f64::from_bits(*s)
            ));
        }
        let group = usize::try_from(group)
            .map_err(|_| Error::CorruptHeader("scale section: group too large".into()))?;
        Ok((Scales { group, scales }, end + 8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A section of one scale for `group` words.
    fn section(group: usize) -> Vec<u8> {
        let mut out = Vec::new();
        Scales {
            group,
            scales: vec![0.5f64.to_bits()],
        }
        .write(&mut out);
        out
    }

    #[test]
    fn a_group_longer_than_the_chunk_is_refused() {
        assert_eq!(
            Scales::parse(&section(1 << 62), 100).unwrap_err().to_string(),
            "karoo: corrupt chunk: scale section: group of 4611686018427387904 words in a chunk of 100"
        );
        let (scales, len) = Scales::parse(&section(100), 100).unwrap();
        assert_eq!((scales.group, len), (100, section(100).len()));
    }
}
