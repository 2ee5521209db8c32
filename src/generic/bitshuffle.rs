//! Compressor 5 of brief chunks: the coding of the Bitshuffle filter's LZ4 mode, in
//! blocks of 8 KiB, each bit-transposed and coded as one LZ4 block behind its length
//! (two bytes, where Bitshuffle writes four). docs/format.md, "Brief chunks", defines
//! the bytes.

use crate::coder::bitshuffled::{append_planes, planes_to_stream};
use crate::coder::shuffled::{compress_bytes_into, decompress_bytes, Backend};
use crate::stream_error::StreamError;

/// Decoded bytes of a whole block (Bitshuffle's default target block size): a block
/// holds `BLOCK_BYTES / E` elements of `E` bytes.
pub const BLOCK_BYTES: usize = 8192;

/// The blocks of `n` elements of `element` bytes: the start and the length of each, in
/// elements. Whole blocks, then the rest cut down to a multiple of eight; the last
/// `n % 8` elements are in no block.
fn blocks(n: usize, element: usize) -> impl Iterator<Item = (usize, usize)> {
    let block = BLOCK_BYTES / element;
    let coded = n / 8 * 8;
    (0..coded)
        .step_by(block)
        .map(move |start| (start, block.min(coded - start)))
}

/// The payload of `data` as elements of `element` bytes (1, 2, 4, 8 or 16; `data` a
/// multiple of it).
pub fn encode(data: &[u8], element: usize) -> Vec<u8> {
    let n = data.len() / element;
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    let mut row = Vec::with_capacity(BLOCK_BYTES / element);
    let mut planes = Vec::with_capacity(BLOCK_BYTES);
    for (start, len) in blocks(n, element) {
        let elements = &data[start * element..(start + len) * element];
        planes.clear();
        for byte in 0..element {
            row.clear();
            row.extend(elements.chunks_exact(element).map(|e| e[byte]));
            append_planes(&row, 0xff, &mut planes);
        }
        let at = out.len();
        out.extend_from_slice(&[0, 0]);
        compress_bytes_into(&planes, Backend::Lz4, 0, &mut out);
        let coded = u16::try_from(out.len() - at - 2).expect("an LZ4 block of 8 KiB fits u16");
        out[at..at + 2].copy_from_slice(&coded.to_le_bytes());
    }
    out.extend_from_slice(&data[n / 8 * 8 * element..]);
    out
}

/// Decodes `payload` into `out` (elements of `element` bytes), which it must fill
/// exactly.
pub fn decode(payload: &[u8], element: usize, out: &mut [u8]) -> Result<(), StreamError> {
    let n = out.len() / element;
    let mut rest = payload;
    let mut planes = vec![0u8; BLOCK_BYTES];
    let mut row = vec![0u8; BLOCK_BYTES / element];
    for (start, len) in blocks(n, element) {
        let (size, after) = rest
            .split_first_chunk::<2>()
            .ok_or(StreamError::Truncated("Bitshuffle block length cut short"))?;
        let size = usize::from(u16::from_le_bytes(*size));
        if after.len() < size {
            return Err(StreamError::Truncated("Bitshuffle block cut short"));
        }
        let (block, after) = after.split_at(size);
        rest = after;
        let planes = &mut planes[..len * element];
        decompress_bytes(block, Backend::Lz4, planes)?;
        let plane_len = len / 8;
        let elements = &mut out[start * element..(start + len) * element];
        for byte in 0..element {
            let first = 8 * byte * plane_len;
            let p = std::array::from_fn(|k| &planes[first + k * plane_len..][..plane_len]);
            planes_to_stream(p, &mut row[..len]);
            for (e, &b) in elements.chunks_exact_mut(element).zip(&row[..len]) {
                e[byte] = b;
            }
        }
    }
    let tail = &mut out[n / 8 * 8 * element..];
    if rest.len() != tail.len() {
        return Err(StreamError::Invalid(
            "Bitshuffle payload does not end with exactly its unblocked elements",
        ));
    }
    tail.copy_from_slice(rest);
    Ok(())
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// The Bitshuffle filter's bit transposition of one block, element by element and
    /// bit by bit: bit `k` of byte `j` of element `i` goes to bit `i % 8` of byte
    /// `(8 j + k) b / 8 + i / 8` of a block of `b` elements.
    fn reference_planes(elements: &[u8], element: usize) -> Vec<u8> {
        let b = elements.len() / element;
        let mut planes = vec![0u8; elements.len()];
        for i in 0..b {
            for j in 0..element {
                for k in 0..8 {
                    let bit = elements[i * element + j] >> k & 1;
                    planes[(8 * j + k) * b / 8 + i / 8] |= bit << (i % 8);
                }
            }
        }
        planes
    }

    /// Random bytes (from `seed`) with runs of repeats, so LZ4 finds matches.
    fn bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..len)
            .map(|i| match i % 64 < 40 {
                true => (i / 64) as u8,
                false => rng.gen(),
            })
            .collect()
    }

    #[test]
    fn blocks_are_bitshuffles_and_the_tail_is_verbatim() {
        for element in [1, 2, 4, 8, 16] {
            let n = BLOCK_BYTES / element + 21;
            let data = bytes(n * element, element as u64);
            let payload = encode(&data, element);
            let size = usize::from(u16::from_le_bytes([payload[0], payload[1]]));
            let first = &payload[2..2 + size];
            let mut planes = vec![0u8; BLOCK_BYTES];
            decompress_bytes(first, Backend::Lz4, &mut planes).unwrap();
            assert_eq!(planes, reference_planes(&data[..BLOCK_BYTES], element));
            // The second block: 21 elements cut down to 16; then 5 verbatim.
            let rest = &payload[2 + size..];
            let second = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
            let mut planes = vec![0u8; 16 * element];
            decompress_bytes(&rest[2..2 + second], Backend::Lz4, &mut planes).unwrap();
            let block = &data[BLOCK_BYTES..BLOCK_BYTES + 16 * element];
            assert_eq!(planes, reference_planes(block, element));
            assert_eq!(&rest[2 + second..], &data[(n - 5) * element..]);
        }
    }

    #[test]
    fn round_trips_every_length_near_the_edges() {
        for element in [1, 2, 4, 8, 16] {
            let block = BLOCK_BYTES / element;
            for n in [
                0,
                1,
                7,
                8,
                9,
                15,
                16,
                block - 1,
                block,
                block + 8,
                3 * block + 13,
            ] {
                let data = bytes(n * element, n as u64);
                let payload = encode(&data, element);
                let mut out = vec![0u8; data.len()];
                decode(&payload, element, &mut out).unwrap();
                assert_eq!(out, data, "{n} elements of {element} bytes");
            }
        }
    }

    #[test]
    fn cut_or_extended_payloads_are_errors() {
        let data = bytes(3 * BLOCK_BYTES + 12, 7);
        let payload = encode(&data, 4);
        let mut out = vec![0u8; data.len()];
        for len in [0, 1, 2, 100, payload.len() - 13, payload.len() - 1] {
            assert!(decode(&payload[..len], 4, &mut out).is_err(), "{len} bytes");
        }
        let mut longer = payload.clone();
        longer.push(0);
        assert!(decode(&longer, 4, &mut out).is_err());
    }
}
