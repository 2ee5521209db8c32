//! The MeerKAT predictive packer's residual coder: each residual's leading zero bytes
//! are counted (capped), the counts go into a bit-packed prefix stream, the remaining
//! low bytes into a byte stream.
//!
//! Layout for `n` residuals of `W`-byte words: `[prefix codes: ceil(n * b / 8) bytes]
//! [residual bytes] [W zero bytes]`, where `b` is 2 for 4-byte words, 3 for 8-byte
//! words and 1 otherwise, and a code counts at most `2^b - 1` zero bytes (`W` for
//! 1-byte words). The zero pad lets the decoder load whole words without a bounds test.

use crate::bits::pack as bitpack;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Bits per prefix code for `bytes`-byte words.
pub fn code_bits(bytes: usize) -> u32 {
    match bytes {
        8 => 3,
        4 => 2,
        _ => 1,
    }
}

/// Largest leading-zero-byte count a prefix code records for `bytes`-byte words.
pub fn code_cap(bytes: usize) -> u32 {
    ((1u32 << code_bits(bytes)) - 1).min(bytes as u32)
}

/// Fewest bytes `n` residuals can take.
pub fn min_encoded_len(n: usize, bytes: usize) -> usize {
    bitpack::packed_len(n, code_bits(bytes)) + n * (bytes - code_cap(bytes) as usize) + bytes
}

/// Appends the coding of `values` to `out`.
pub fn encode<T: Word>(values: &[T], out: &mut Vec<u8>) {
    let w = T::BYTES;
    let bits = code_bits(w);
    let cap = code_cap(w);
    let start = out.len();
    let codes_len = bitpack::packed_len(values.len(), bits);
    out.resize(start + codes_len + values.len() * w + w, 0);
    let mut codes = Vec::with_capacity(values.len());
    let mut pos = start + codes_len;
    for &r in values {
        let zeros = r.leading_zero_bytes().min(cap);
        codes.push(zeros as u8);
        r.store(&mut out[pos..]);
        pos += w - zeros as usize;
    }
    out[pos..pos + w].fill(0);
    out.truncate(pos + w);
    bitpack::pack(&codes, bits, &mut out[start..start + codes_len]);
}

/// Exact size in bits of the coding of `values`.
pub fn encoded_bits<T: Word>(values: &[T]) -> u64 {
    let w = T::BYTES as u64;
    let cap = code_cap(T::BYTES);
    let bytes: u64 = values
        .iter()
        .map(|r| w - u64::from(r.leading_zero_bytes().min(cap)))
        .sum();
    8 * (bytes + w) + values.len() as u64 * u64::from(code_bits(T::BYTES))
}

/// Decodes `out.len()` residuals from `input`, which must be exactly their coding.
pub fn decode<T: Word>(input: &[u8], out: &mut [T]) -> Result<(), StreamError> {
    let w = T::BYTES;
    let bits = code_bits(w);
    let cap = code_cap(w);
    let codes_len = bitpack::packed_len(out.len(), bits);
    if input.len() < codes_len + w {
        return Err(StreamError::PrefixCodesTruncated {
            len: input.len(),
            words: out.len(),
        });
    }
    let packed = &input[..codes_len];
    let mut codes = Vec::new();
    bitpack::unpack(packed, bits, out.len(), &mut codes);
    if !bitpack::padding_is_zero(packed, bits, out.len()) {
        return Err(StreamError::NonzeroPadding(
            "prefix stream padding is not zero",
        ));
    }
    if codes.iter().any(|&c| u32::from(c) > cap) {
        return Err(StreamError::Invalid("prefix code out of range"));
    }
    let residuals = &input[codes_len..];
    let expected: usize = codes.iter().map(|&c| w - c as usize).sum::<usize>() + w;
    if residuals.len() != expected {
        return Err(StreamError::ResidualLength {
            got: residuals.len(),
            expected,
        });
    }
    if residuals[expected - w..].iter().any(|&b| b != 0) {
        return Err(StreamError::NonzeroPadding(
            "residual stream padding is not zero",
        ));
    }
    let masks: Vec<T> = (0..=cap).map(|z| T::ONES.shr_or_zero(8 * z)).collect();
    let mut pos = 0;
    for (value, &code) in out.iter_mut().zip(&codes) {
        *value = T::load(&residuals[pos..]) & masks[code as usize];
        pos += w - code as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_sizes() {
        let values = [0u32, 1, 0x100, 0x0001_0000, 0x0100_0000, u32::MAX];
        let mut out = Vec::new();
        encode(&values, &mut out);
        // 6 codes x 2 bits = 2 bytes; residual bytes 1+1+2+3+4+4; 4 pad.
        assert_eq!(out.len(), 2 + 15 + 4);
        assert_eq!(encoded_bits(&values), 8 * out.len() as u64 - 4);
        let mut back = [0u32; 6];
        decode(&out, &mut back).unwrap();
        assert_eq!(back, values);
        for len in 0..out.len() {
            assert!(decode(&out[..len], &mut back).is_err());
        }
        let mut longer = out.clone();
        longer.push(0);
        assert!(decode(&longer, &mut back).is_err());
    }
}
