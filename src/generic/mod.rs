//! Brief chunks (format version 4): a chunk stored verbatim or coded whole by a
//! general-purpose pipeline behind a header of at most 16 bytes, and the encoder's choice
//! between them and the tiled chunk (see docs/format.md, "Brief chunks").

mod bitshuffle;
mod choice;
pub mod pipeline;

pub(crate) use choice::{smallest, SAMPLE_MAX_BYTES};

use crate::element_type::ElementType;
use crate::format;
use pipeline::{Effort, Pipeline, STORED};

/// The brief chunk of `data` (words of `word_size` bytes, `shape` in words, elements of
/// `element`) through `pipeline` at full effort (its payload from `pipeline::encode`
/// when given, else coded here); `None` when the pipeline does not apply to the data's
/// size or the shape does not hold it.
pub fn brief_chunk(
    data: &[u8],
    word_size: usize,
    shape: &[u64],
    element: ElementType,
    pipeline: Pipeline,
    payload: Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let words = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    if !matches!(word_size, 1 | 2 | 4 | 8)
        || words.checked_mul(word_size as u64) != Some(data.len() as u64)
        || !pipeline.fits(data.len(), word_size)
    {
        return None;
    }
    let payload = match (pipeline == STORED, payload) {
        (true, _) => None,
        (false, Some(payload)) => Some(payload),
        (false, None) => Some(pipeline::encode(data, word_size, pipeline, Effort::Full)),
    };
    let header_len = format::brief_header_len(shape, data.len() as u64);
    let mut chunk = Vec::with_capacity(header_len + payload.as_ref().map_or(data.len(), Vec::len));
    let content = crate::checksum::data_checksum(data);
    format::write_brief(
        element,
        pipeline.to_byte(word_size),
        shape,
        content,
        &mut chunk,
    );
    chunk.extend_from_slice(payload.as_deref().unwrap_or(data));
    Some(chunk)
}
