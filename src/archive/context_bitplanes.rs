//! Coder 14, context-modelled bit planes (specified in docs/format.md): archive mode's
//! coder for sparse tiles. Each bit plane with a set bit (plane `j` holds bit `j` of
//! every value, as for the bit-shuffled coders) is coded bit by bit with binary rANS,
//! under probabilities that adapt per context of the bits around it: the two values
//! before it, the neighbouring element, the same value one row earlier and its two
//! neighbours, and whether the value has a set bit in a plane coded before. Scattered
//! flags then cost about their entropy, where a general-purpose compressor pays for the
//! byte patterns it matches.

use crate::bits::plane_mask;
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Probabilities are in units of `2^-PROB_BITS`.
const PROB_BITS: u32 = 15;
/// Probability one.
const ONE: u32 = 1 << PROB_BITS;
/// The rANS state's lower bound (and the encoder's initial and decoder's final state).
const STATE_LOW: u32 = 1 << 16;
/// Contexts per plane: seven neighbouring bits.
const CONTEXTS: usize = 128;
/// The slowest a context's probability follows the bits: a shift of 7, 1/128 of the way.
const MAX_RATE: u32 = 7;

/// A context's estimate that the next bit is 1, and how many bits it has seen: it moves
/// by 1/2, 1/4, 1/4, 1/8, ... of the way to each bit (about the mean so far) and then by
/// `2^-MAX_RATE`, so that a context learns in few bits and then settles.
#[derive(Debug, Clone, Copy)]
struct Counter {
    p_one: u16,
    seen: u8,
}

impl Counter {
    /// Every context's state at the start of a plane: probability one half, nothing seen.
    const START: Counter = Counter {
        p_one: 1 << 14,
        seen: 0,
    };

    /// The probability of a 1, in `1 ..= ONE - 1`.
    #[inline(always)]
    fn p_one(self) -> u32 {
        u32::from(self.p_one)
    }

    /// Moves the probability towards `bit` (it stays within `1 ..= ONE - 1`).
    #[inline(always)]
    fn update(&mut self, bit: bool) {
        let rate = (u32::BITS - (u32::from(self.seen) + 1).leading_zeros()).min(MAX_RATE);
        let q = self.p_one;
        self.p_one = if bit {
            q + ((ONE as u16 - q) >> rate)
        } else {
            q - (q >> rate)
        };
        self.seen = self.seen.saturating_add(1);
    }
}

/// The frequency and cumulative start of `bit` when a 1 has probability `p_one`.
#[inline(always)]
fn interval(bit: bool, p_one: u32) -> (u32, u32) {
    if bit {
        (p_one, ONE - p_one)
    } else {
        (ONE - p_one, 0)
    }
}

/// Where a value's neighbours lie in the tile's value order.
#[derive(Debug, Clone, Copy)]
struct Neighbourhood {
    /// Values per row: `i - width` is the same value one row earlier.
    width: usize,
    /// Values between neighbouring elements.
    left: usize,
}

impl Neighbourhood {
    fn of(dims: Dims) -> Neighbourhood {
        Neighbourhood {
            width: dims.width.max(1),
            left: dims.left.max(1),
        }
    }

    /// Zero bytes before a plane's bits in its buffer, so that every neighbour before
    /// the plane's start reads as 0.
    fn pad(self) -> usize {
        (self.width + 1).max(self.left).max(2)
    }

    /// A buffer for one plane's bits of `n` values, after [`Neighbourhood::pad`] zeros.
    fn plane_buffer(self, n: usize) -> Vec<u8> {
        vec![0u8; self.pad() + n]
    }

    /// Codes a plane of `n` values in order: `step(i, context)` codes value `i` in its
    /// context (the neighbours' bits; the caller adds `64` when the value has a set bit
    /// in a plane coded before) and returns its bit, which later contexts read from
    /// `bits` (a [`Neighbourhood::plane_buffer`], zeroed).
    #[inline(always)]
    fn scan_plane<E>(
        self,
        bits: &mut [u8],
        n: usize,
        mut step: impl FnMut(usize, usize) -> Result<u8, E>,
    ) -> Result<(), E> {
        let pad = self.pad();
        let (w, left) = (self.width, self.left);
        // A row's first values have no row above (nor, with rows of one value, a
        // neighbour up and right): the zeros before the plane stand for the neighbours
        // before it, and the values of the first row leave out the row above.
        let first_row = if w >= 2 { w.min(n) } else { n };
        for i in 0..first_row {
            let at = pad + i;
            let mut context = usize::from(bits[at - 1]) | usize::from(bits[at - 2]) << 1;
            context |= usize::from(bits[at - left]) << 2;
            if i >= w {
                context |= usize::from(bits[at - w]) << 3 | usize::from(bits[at - w - 1]) << 4;
            }
            bits[at] = step(i, context)?;
        }
        for i in first_row..n {
            let at = pad + i;
            let context = usize::from(bits[at - 1])
                | usize::from(bits[at - 2]) << 1
                | usize::from(bits[at - left]) << 2
                | usize::from(bits[at - w]) << 3
                | usize::from(bits[at - w - 1]) << 4
                | usize::from(bits[at - w + 1]) << 5;
            bits[at] = step(i, context)?;
        }
        Ok(())
    }
}

/// The planes with a bit set in `mask`, in increasing order.
fn planes(mask: u64) -> impl Iterator<Item = u32> {
    (0..64).filter(move |j| mask >> j & 1 == 1)
}

/// Appends the coding of `values`, laid out as `dims` says, to `out`: the mask of the
/// planes with a set bit (`T::BYTES` bytes, little-endian), then, when any has, the
/// rANS state and stream of their bits.
pub fn encode<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) {
    let mask = plane_mask::of(values);
    plane_mask::write::<T>(mask, out);
    if mask == 0 {
        return;
    }
    let near = Neighbourhood::of(dims);
    // Each bit with the probability its context gave a 1: the model runs forwards, the
    // rANS coder backwards.
    let n = values.len();
    let mut symbols: Vec<u16> = Vec::with_capacity(n * mask.count_ones() as usize);
    let mut bits = near.plane_buffer(n);
    for j in planes(mask) {
        let lower = (1u64 << j) - 1;
        let mut model = [Counter::START; CONTEXTS];
        let coded = near.scan_plane(&mut bits, n, |i, neighbours| {
            let word = values[i].to_u64();
            let c = neighbours | usize::from(word & lower != 0) << 6;
            let bit = word >> j & 1 == 1;
            symbols.push(model[c].p_one() as u16 | u16::from(bit) << PROB_BITS);
            model[c].update(bit);
            Ok::<u8, std::convert::Infallible>(u8::from(bit))
        });
        let Ok(()) = coded;
    }
    let mut x = STATE_LOW;
    let mut words: Vec<u16> = Vec::with_capacity(symbols.len() / 8 + 4);
    for &s in symbols.iter().rev() {
        let (f, start) = interval(s >> PROB_BITS == 1, u32::from(s) & (ONE - 1));
        while x >= f << 17 {
            words.push(x as u16);
            x >>= 16;
        }
        x = ((x / f) << PROB_BITS) + x % f + start;
    }
    out.extend_from_slice(&x.to_le_bytes());
    out.reserve(2 * words.len());
    for w in words.iter().rev() {
        out.extend_from_slice(&w.to_le_bytes());
    }
}

/// Decodes exactly `out.len()` values, laid out as `dims` says, from `input`, which
/// must be exactly their coding.
pub fn decode<T: Word>(input: &[u8], dims: Dims, out: &mut [T]) -> Result<(), StreamError> {
    let (mask, rest) = plane_mask::read::<T>(input).ok_or(StreamError::Truncated(
        "context bit planes: coding shorter than its plane mask",
    ))?;
    out.fill(T::from_u64(0));
    if mask == 0 {
        if !rest.is_empty() {
            return Err(StreamError::Invalid(
                "context bit planes: coding of no plane has bytes after its mask",
            ));
        }
        return Ok(());
    }
    let (state, stream) = rest
        .split_at_checked(4)
        .ok_or(StreamError::Truncated("context bit planes: no rANS state"))?;
    let mut x = u32::from_le_bytes(state.try_into().expect("4 bytes"));
    if x < STATE_LOW {
        return Err(StreamError::Invalid(
            "context bit planes: rANS state below 2^16",
        ));
    }
    if !stream.len().is_multiple_of(2) {
        return Err(StreamError::Invalid(
            "context bit planes: rANS stream is not whole 16-bit words",
        ));
    }
    let mut words = stream
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_le_bytes([w[0], w[1]])));
    let near = Neighbourhood::of(dims);
    let n = out.len();
    let mut bits = near.plane_buffer(n);
    let pad = near.pad();
    for j in planes(mask) {
        let mut model = [Counter::START; CONTEXTS];
        near.scan_plane(&mut bits, n, |i, neighbours| {
            let c = neighbours | usize::from(out[i].to_u64() != 0) << 6;
            let p_one = model[c].p_one();
            let slot = x & (ONE - 1);
            let bit = slot >= ONE - p_one;
            let (f, start) = interval(bit, p_one);
            x = f * (x >> PROB_BITS) + slot - start;
            if x < STATE_LOW {
                // `let else`, not `ok_or`: that builds the error and drops it each time.
                let Some(word) = words.next() else {
                    return Err(StreamError::Truncated(
                        "context bit planes: rANS stream ends early",
                    ));
                };
                x = x << 16 | word;
            }
            model[c].update(bit);
            Ok(u8::from(bit))
        })?;
        for (o, &b) in out.iter_mut().zip(&bits[pad..]) {
            *o = T::from_u64(o.to_u64() | u64::from(b) << j);
        }
    }
    if words.next().is_some() {
        return Err(StreamError::Invalid(
            "context bit planes: rANS stream words left over",
        ));
    }
    if x != STATE_LOW {
        return Err(StreamError::Invalid(
            "context bit planes: final rANS state is not 2^16",
        ));
    }
    Ok(())
}

/// The coded size of `values` in bits (exact: the coding is built).
pub fn encoded_bits<T: Word>(values: &[T], dims: Dims) -> u64 {
    let mut out = Vec::new();
    encode(values, dims, &mut out);
    8 * out.len() as u64
}

/// Fewest bytes a coding of `bytes`-byte words takes: the plane mask (entropy coding has
/// no per-value floor, so the bound on a hostile chunk's decoded size is per tile).
pub fn min_encoded_len(bytes: usize) -> usize {
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(width: usize, left: usize) -> Dims {
        Dims { width, left }
    }

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn round_trips_every_width_and_length_and_refuses_other_sizes() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        for n in [0usize, 1, 2, 7, 8, 9, 63, 1000] {
            let v64: Vec<u64> = (0..n).map(|_| next() >> (next() % 64)).collect();
            let v32: Vec<u32> = v64.iter().map(|&v| v as u32).collect();
            let v16: Vec<u16> = v64.iter().map(|&v| v as u16).collect();
            let v8: Vec<u8> = v64.iter().map(|&v| v as u8).collect();
            fn check<T: Word>(values: &[T]) {
                for d in [dims(1, 1), dims(3, 2), dims(16, 4), dims(5000, 1)] {
                    let mut out = Vec::new();
                    encode(values, d, &mut out);
                    assert_eq!(8 * out.len() as u64, encoded_bits(values, d));
                    let mut back = vec![T::ONES; values.len()];
                    decode(&out, d, &mut back).unwrap();
                    assert_eq!(back, values);
                }
            }
            check(&v64);
            check(&v32);
            check(&v16);
            check(&v8);
        }
    }

    #[test]
    fn scattered_flags_cost_about_their_entropy() {
        // One flag in 64 at random places: 0.116 bits a flag.
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let n = 1 << 16;
        let flags: Vec<u8> = (0..n)
            .map(|_| u8::from(next().is_multiple_of(64)))
            .collect();
        let mut out = Vec::new();
        encode(&flags, dims(256, 1), &mut out);
        let count = flags.iter().filter(|&&f| f == 1).count() as f64;
        let p = count / n as f64;
        let entropy = -(p * p.log2() + (1.0 - p) * (1.0 - p).log2()) * n as f64 / 8.0;
        let len = out.len() as f64;
        assert!(
            len < entropy * 1.06 && len > entropy * 0.9,
            "{len} bytes, entropy {entropy:.0}"
        );
        // Whole flagged rows repeat along time: the row above predicts them.
        let rows: Vec<u8> = (0..n).map(|i| u8::from(i % 256 < 40)).collect();
        let mut out = Vec::new();
        encode(&rows, dims(256, 1), &mut out);
        assert!(out.len() < 64, "{} bytes", out.len());
    }

    #[test]
    fn planes_after_the_first_see_where_values_are_set() {
        // Float weights 8.0 (0x4100_0000: bits 24 and 30) or 0: the second plane is
        // certain once the first is known.
        let mut next = xorshift(7);
        let weights: Vec<u32> = (0..1 << 14)
            .map(|_| {
                if next().is_multiple_of(8) {
                    0
                } else {
                    0x4100_0000
                }
            })
            .collect();
        let mut one = Vec::new();
        encode(&weights, dims(128, 1), &mut one);
        let flags: Vec<u8> = weights.iter().map(|&w| u8::from(w != 0)).collect();
        let mut alone = Vec::new();
        encode(&flags, dims(128, 1), &mut alone);
        // Two planes cost little more than one: mask bytes and a few bits a context.
        assert!(
            one.len() < alone.len() + 64,
            "{} vs {}",
            one.len(),
            alone.len()
        );
    }

    #[test]
    fn corrupt_codings_are_refused() {
        let d = dims(4, 1);
        let values: Vec<u16> = (0..100).map(|i| (i % 7 == 0) as u16 * 0x0101).collect();
        let mut good = Vec::new();
        encode(&values, d, &mut good);
        let mut out = [0u16; 100];
        decode(&good, d, &mut out).unwrap();
        let refused = |input: &[u8]| {
            let mut out = [0u16; 100];
            decode(input, d, &mut out).unwrap_err()
        };
        assert_eq!(
            refused(&good[..1]),
            StreamError::Truncated("context bit planes: coding shorter than its plane mask")
        );
        assert_eq!(
            refused(&[0, 0, 1]),
            StreamError::Invalid("context bit planes: coding of no plane has bytes after its mask")
        );
        assert_eq!(
            refused(&good[..5]),
            StreamError::Truncated("context bit planes: no rANS state")
        );
        let mut low = good.clone();
        low[2..6].copy_from_slice(&0xFFFFu32.to_le_bytes());
        assert_eq!(
            refused(&low),
            StreamError::Invalid("context bit planes: rANS state below 2^16")
        );
        assert_eq!(
            refused(&good[..good.len() - 1]),
            StreamError::Invalid("context bit planes: rANS stream is not whole 16-bit words")
        );
        assert_eq!(
            refused(&good[..good.len() - 2]),
            StreamError::Truncated("context bit planes: rANS stream ends early")
        );
        let mut longer = good.clone();
        longer.extend_from_slice(&[0, 0]);
        assert!(decode(&longer, d, &mut out).is_err());
        let mut bad_state = good.clone();
        bad_state[2] ^= 1;
        assert!(decode(&bad_state, d, &mut out).is_err() || out != values[..]);
        // The all-zero coding is the mask alone.
        let mut zeros = Vec::new();
        encode(&[0u32; 10], d, &mut zeros);
        assert_eq!(zeros, vec![0; 4]);
    }
}
