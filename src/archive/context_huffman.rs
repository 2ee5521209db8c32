//! The archive coders' Huffman variant: the [`context`](super::context) model's tokens
//! coded with canonical, length-limited Huffman codes, one code per context (as bzip2
//! keeps several tables), each token's raw bits right after its code in one LSB-first
//! bit stream. Decoding looks up [`MAX_CODE_LEN`] bits at a time.
//!
//! Coding layout (specified in docs/format.md, "Coder 5: context Huffman"): the context
//! configuration (4 bytes); each context's code lengths ([`huffman::write_lengths`]);
//! the bit stream to the end.

use super::context::{ContextConfig, Model, CONFIG_LEN};
use super::huffman::{self, MAX_CODE_LEN};
use crate::bits::io::{BitReader, BitWriter};
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Appends the coding of `values`, laid out as `dims` says, to `out`.
pub fn encode<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) {
    let model = Model::build_and_write(values, dims, out);
    let codes: Vec<huffman::Encoder> = model
        .context_counts::<T>()
        .map(|c| {
            let lengths = huffman::code_lengths(c);
            huffman::write_lengths(&lengths, out);
            huffman::Encoder::new(&lengths).expect("code_lengths gives a valid code")
        })
        .collect();
    let mut w = BitWriter::with_capacity(values.len() * T::BYTES);
    let (cfg, classes) = (model.cfg, &model.classes);
    for (((v, &c), &t), &x) in values
        .iter()
        .zip(classes)
        .zip(&model.tokens)
        .zip(&model.contexts)
    {
        let (bits, len) = codes[usize::from(x)].code(usize::from(t));
        w.put(u64::from(bits), len);
        let n = cfg.raw_bits(c);
        if n > 0 {
            w.put_wide(v.to_u64() & (u64::MAX >> (64 - n)), n);
        }
    }
    out.extend_from_slice(&w.finish());
}

/// Decodes `out.len()` values, laid out as `dims` says, from `input`, which must be
/// exactly their coding.
pub fn decode<T: Word>(input: &[u8], dims: Dims, out: &mut [T]) -> Result<(), StreamError> {
    let cfg = ContextConfig::read(input)?;
    let alphabet = cfg.alphabet::<T>();
    let mut at = CONFIG_LEN;
    let mut decoders = Vec::with_capacity(cfg.contexts());
    for _ in 0..cfg.contexts() {
        let (lengths, used) = huffman::read_lengths(&input[at..], alphabet)?;
        at += used;
        decoders.push(huffman::Decoder::new(&lengths)?);
    }
    let stream = &input[at..];
    let mut r = BitReader::new(stream);
    let (width, step) = (dims.width.max(1), dims.left.max(1));
    let mut classes = vec![0u8; out.len()];
    for i in 0..out.len() {
        let left = if i >= step { classes[i - step] } else { 0 };
        let up = if i >= width { classes[i - width] } else { left };
        let decoder = &decoders[cfg.context(up, left)];
        // `let else`, not `ok_or`: that builds the error and drops it for every value.
        let Some((t, len)) = decoder.decode(r.peek(MAX_CODE_LEN) as u32) else {
            return Err(StreamError::Invalid("invalid Huffman code"));
        };
        r.consume(len);
        (out[i], classes[i]) = cfg.read_value(t as u8, &mut r);
    }
    r.finish("bit stream")
}

/// Fewest bytes a coding can take, whatever the number of values: the configuration
/// and one empty table.
pub fn min_encoded_len() -> usize {
    CONFIG_LEN + 2
}

#[cfg(test)]
mod tests {
    use crate::coder::testing;
    use crate::coder::Coder;

    testing::shared_coder_tests!(Coder::ContextHuffman);

    #[test]
    fn size_is_within_a_bit_per_token_of_the_estimate() {
        let (size, estimate) = testing::size_and_estimate(Coder::ContextHuffman);
        assert!(
            size >= estimate && size < estimate + 100_000 / 8,
            "{size} vs {estimate}"
        );
    }
}
