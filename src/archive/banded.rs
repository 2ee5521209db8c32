//! Coder 11, banded context rANS (specified in docs/format.md): the tokens, contexts and
//! tables of coder 4 (or of coder 10's float fields), with the tile's rows cut into `G`
//! bands of columns and the residuals taken one from each band in turn ("band order"),
//! each band with a rANS state of its own ([`band_rans`]).
//!
//! In band order, position `p` of the tile's residuals is band `p mod G`, and its
//! neighbours (`p - width`, the same column one row earlier; `p - G left`, the same
//! band `left` residuals earlier) lie in its own band, so the `G` residuals of one turn
//! depend on none of each other: the decoder's vector kernel ([`kernel`]) decodes 8 or
//! 16 at once, their contexts from two 16-byte loads of earlier classes, where coder 4 follows
//! one chain of dependent lookups per residual. The raw bits are read afterwards in
//! one pass. The model is coder 4's over the residuals in band order, with `G left` for
//! `left`, so the encoder reuses it whole.

mod kernel;

use super::band_rans::{self, MAX_BANDS};
use super::context::{ContextConfig, Model, CONFIG_LEN};
use super::context_ans::{read_tables, token_values, with_tables, write_tables};
use super::float_fields::{self, Choice};
use super::rans::DecodeTable;
use crate::bits::io::{BitCursor, BitWriter};
use crate::layout::Dims;
use crate::stream_error::StreamError;
use crate::word::Word;

/// Fewest residuals of a tile that the tile encoder codes banded: below, the states of
/// 16 bands (56 bytes more than coder 4's two) weigh on the coding more than the faster
/// decoding is worth; from here on small chunks (a few time steps of a HERA file)
/// decode much faster than with coder 4 for a negligible cost in size.
pub const MIN_RESIDUALS: usize = 1 << 14;
/// Fewest residuals of a tile coded in 32 bands where its rows allow (fewer get at most
/// 16): as few as any tile the tile encoder codes banded. Two registers of the vector
/// kernel follow two chains of table lookups at once, which decodes such tiles faster
/// than one register of 16 bands, for 64 bytes more of states (docs/benchmarks.md has
/// the measurements).
const MIN_RESIDUALS_32: usize = MIN_RESIDUALS;

/// Kind byte: coder 4's bit-length tokens.
const KIND_LENGTHS: u8 = 0;
/// Kind byte: coder 10's float-field tokens.
const KIND_FIELDS: u8 = 1;

/// Whether the tile encoder codes `n` residuals laid out as `dims` banded rather than
/// with coder 4 or 10: enough of them, in whole rows that split into at least 8 bands
/// (8 to 16 in one register of the vector kernel, 17 to 32 in two).
pub fn pays(n: usize, dims: Dims) -> bool {
    n >= MIN_RESIDUALS && bands_for(n, dims) >= 8
}

/// Fewest elements (of `left` words) in a row of a band coded in a band count that is
/// not a power of two: all but one in 16 then have their `left` neighbour in the same
/// row of the band (the first ones' lies at the end of the band's previous row).
const MIN_BAND_ELEMENTS: usize = 16;

/// The bands the rows of `n` residuals laid out as `dims` are coded in (1 unless the
/// rows are whole): the most of 32, 16, 8, 4 and 2 that divide the width (at most 16
/// below [`MIN_RESIDUALS_32`] residuals), or more where a larger divisor of the width
/// (up to the same bound) leaves [`MIN_BAND_ELEMENTS`] per band row: more of the vector
/// kernel's lanes then decode at once (rows of 1640 words, 41 baselines of 5 channels
/// of 4 polarisations of complex numbers, get 20 bands: one register and 4 lanes of
/// another, where 8 would fill half of one).
fn bands_for(n: usize, dims: Dims) -> usize {
    let width = dims.width.max(1);
    if !n.is_multiple_of(width) {
        return 1;
    }
    let most = if n >= MIN_RESIDUALS_32 { MAX_BANDS } else { 16 };
    let power_of_two = [32, 16, 8, 4, 2]
        .into_iter()
        .filter(|&g| g <= most)
        .find(|&g| width.is_multiple_of(g))
        .unwrap_or(1);
    let min_band_width = MIN_BAND_ELEMENTS * dims.left.max(1);
    (power_of_two + 1..=most)
        .rev()
        .find(|&g| width.is_multiple_of(g) && width / g >= min_band_width)
        .unwrap_or(power_of_two)
}

/// The layout the model sees in band order: the same width, `bands` times the `left`.
fn band_dims(dims: Dims, bands: usize) -> Dims {
    Dims {
        width: dims.width.max(1),
        left: dims.left.max(1) * bands,
    }
}

/// `values` (whole rows of `width`, unless `bands` is 1) in band order.
fn to_band_order<T: Copy>(values: &[T], width: usize, bands: usize) -> Vec<T> {
    if bands == 1 {
        return values.to_vec();
    }
    let b = width / bands;
    let mut out = Vec::with_capacity(values.len());
    for row in values.chunks_exact(width) {
        for c in 0..b {
            out.extend((0..bands).map(|g| row[g * b + c]));
        }
    }
    out
}

/// Appends the coding of `values`, laid out as `dims` says, with bit-length tokens and
/// the most bands their rows allow, to `out`.
pub fn encode<T: Word>(values: &[T], dims: Dims, out: &mut Vec<u8>) {
    encode_with(values, dims, Model::build_best, out);
}

/// Appends the coding of `values`, laid out as `dims` says, with coder 10's float-field
/// tokens of `choice` (the window and token width of `values`), to `out`.
pub fn encode_fields<T: Word>(values: &[T], dims: Dims, choice: Choice, out: &mut Vec<u8>) {
    encode_with(
        values,
        dims,
        |ordered, dims| float_fields::model(ordered, dims, choice),
        out,
    );
}

/// Appends the coding of `values`, laid out as `dims` says, in the most bands their rows
/// allow, with the model `model` builds of them in band order.
fn encode_with<T: Word>(
    values: &[T],
    dims: Dims,
    model: impl FnOnce(&[T], Dims) -> Model,
    out: &mut Vec<u8>,
) {
    let width = dims.width.max(1);
    let bands = bands_for(values.len(), dims);
    let ordered = to_band_order(values, width, bands);
    let model = model(&ordered, band_dims(dims, bands));
    write(&ordered, &model, bands, out);
}

/// Appends the coding of `ordered` (residuals in band order of `bands` bands) with
/// `model` (theirs).
fn write<T: Word>(ordered: &[T], model: &Model, bands: usize, out: &mut Vec<u8>) {
    out.push(bands as u8);
    out.push(if model.cfg.fields.is_some() {
        KIND_FIELDS
    } else {
        KIND_LENGTHS
    });
    model.cfg.write(out);
    let symbols = write_tables::<T>(model, out);
    let n = ordered.len();
    let mut enc = band_rans::Encoder::new(bands, n);
    let (contexts, tokens) = (&model.contexts[..n], &model.tokens[..n]);
    enc.put_all_of(contexts, tokens, &symbols);
    let mut stream = Vec::new();
    enc.finish(&mut stream);
    out.extend_from_slice(&(stream.len() as u32).to_le_bytes());
    out.extend_from_slice(&stream);
    let mut raw = BitWriter::with_capacity(n * T::BYTES);
    model.cfg.write_raw_bits(ordered, &model.classes, &mut raw);
    out.extend_from_slice(&raw.finish());
}

/// Decodes `out.len()` values, laid out as `dims` says, from `input`, which must be
/// exactly their coding.
pub fn decode<T: Word>(input: &[u8], dims: Dims, out: &mut [T]) -> Result<(), StreamError> {
    let (&[bands, kind], rest) = input
        .split_first_chunk::<2>()
        .ok_or(StreamError::Truncated("coding shorter than its band count"))?;
    let bands = usize::from(bands);
    let width = dims.width.max(1);
    let n = out.len();
    if !(1..=MAX_BANDS).contains(&bands)
        || !width.is_multiple_of(bands)
        || (bands > 1 && !n.is_multiple_of(width))
    {
        return Err(StreamError::Invalid(
            "band count does not cut the tile's rows into whole bands",
        ));
    }
    let cfg = match kind {
        KIND_LENGTHS => ContextConfig::read(rest)?,
        KIND_FIELDS => ContextConfig::read_fields::<T>(rest)?,
        _ => return Err(StreamError::Invalid("unknown banded token kind")),
    };
    let lookup = Lookup::new::<T>(cfg, dims.left.max(1) * bands, width);
    with_tables(|tables| {
        let (stream, raw) = read_tables::<T>(&rest[cfg.len()..], cfg, &lookup.values, tables)?;
        let mut dec = band_rans::Decoder::new(stream, bands)?;
        SCRATCH.with(|cell| {
            let mut fresh = Scratch::default();
            let mut kept = cell.try_borrow_mut();
            let scratch = kept.as_deref_mut().unwrap_or(&mut fresh);
            // Every token and class is written before it is read: grow only.
            grow(&mut scratch.tokens, 2 * n);
            let (tokens, classes) = scratch.tokens[..2 * n].split_at_mut(n);
            let done = kernel::decode_tokens(
                &mut dec,
                tables.as_slice(),
                &mut scratch.slots,
                &lookup,
                tokens,
                classes,
            );
            lookup.decode_tokens(&mut dec, tables.as_slice(), tokens, classes, done);
            dec.finish()?;
            // The values in band order by the vector raw-bit kernel of their width, then
            // put in place; when that kernel does not run, by the portable reader below.
            let coded = Coded {
                tokens,
                values: &lookup.values,
                raw,
                width,
                bands,
            };
            let by_kernel = if T::BITS <= 32 {
                let kernels: Kernels<u32, T> = (kernel::restore_values, kernel::unband::<T>);
                coded.restore_by_kernel(&mut scratch.ordered, kernels, out)
            } else {
                let kernels: Kernels<u64, T> =
                    (kernel::restore_wide_values, kernel::unband_wide::<T>);
                coded.restore_by_kernel(&mut scratch.wide, kernels, out)
            };
            if let Some(finished) = by_kernel {
                return finished;
            }
            let mut bits = BitCursor::new(raw);
            restore(tokens, &lookup.values, &mut bits, width, bands, out);
            bits.finish("raw bits")
        })
    })
}

/// Buffers of a thread's banded decoding, kept from one tile to the next.
#[derive(Default)]
struct Scratch {
    /// Tokens, then their classes, in band order.
    tokens: Vec<u8>,
    /// Values in band order.
    ordered: Vec<u32>,
    /// Values of 64-bit words in band order.
    wide: Vec<u64>,
    /// The vector kernel's entry of every slot of every table.
    slots: Vec<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// The value of `token` (see [`token_values`] for `values`), its raw bits read from
/// `bits`.
#[inline(always)]
fn value<T: Word>(token: u8, values: &[u32; 256], bits: &mut BitCursor<'_>) -> T {
    let v = values[usize::from(token)];
    let n = v >> 8 & 0xff;
    let raw = if T::BITS <= 32 {
        bits.get(n)
    } else {
        bits.get_wide(n)
    };
    T::from_u64(u64::from(v >> 16) << n | raw)
}

/// Writes the values of `ordered` (in band order of `BANDS` bands, whole rows of
/// `width`) to their places in `out`.
#[inline(always)]
fn unband<S: Copy + Into<u64>, T: Word, const BANDS: usize>(
    ordered: &[S],
    width: usize,
    out: &mut [T],
) {
    let b = width / BANDS;
    for (row, from) in out.chunks_exact_mut(width).zip(ordered.chunks_exact(width)) {
        for (g, band) in row.chunks_exact_mut(b).enumerate() {
            for (c, o) in band.iter_mut().enumerate() {
                *o = T::from_u64(from[c * BANDS + g].into());
            }
        }
    }
}

/// [`unband`] of any number of `bands` (1 when the rows are not whole).
#[inline(always)]
fn unband_by<S: Copy + Into<u64>, T: Word>(
    ordered: &[S],
    width: usize,
    bands: usize,
    out: &mut [T],
) {
    if bands == 1 {
        for (o, &v) in out.iter_mut().zip(ordered) {
            *o = T::from_u64(v.into());
        }
        return;
    }
    let b = width / bands;
    for (row, from) in out.chunks_exact_mut(width).zip(ordered.chunks_exact(width)) {
        for (g, band) in row.chunks_exact_mut(b).enumerate() {
            for (c, o) in band.iter_mut().enumerate() {
                *o = T::from_u64(from[c * bands + g].into());
            }
        }
    }
}

/// Grows `buffer` to at least `n` values (every one is written before it is read).
fn grow<S: Default + Clone>(buffer: &mut Vec<S>, n: usize) {
    if buffer.len() < n {
        buffer.resize(n, S::default());
    }
}

/// A vector raw-bit kernel of values of `S` (see [`kernel::restore_values`]) and the
/// vector kernel that puts such values in place (see [`kernel::unband`]).
type Kernels<S, T> = (
    fn(&[u8], &[u32; 256], &[u8], &mut u64, &mut [S]) -> usize,
    fn(&[S], usize, usize, &mut [T]) -> bool,
);

/// A tile's tokens in band order, with what turns them into values: the value table of
/// the tokens (see [`token_values`]), the raw bits, and the rows (of `width`, in `bands`
/// bands) the values go to.
struct Coded<'a> {
    tokens: &'a [u8],
    values: &'a [u32; 256],
    raw: &'a [u8],
    width: usize,
    bands: usize,
}

impl Coded<'_> {
    /// Restores the values into `out`: their raw bits read into `ordered` (grown to the
    /// token count) by the raw-bit kernel of `kernels` and, past where it stops, by the
    /// portable reader; then put in place by the placing kernel of `kernels` or the
    /// portable loop. `None` when the raw-bit kernel does not run (this CPU has none),
    /// else whether the raw bits were consumed exactly.
    fn restore_by_kernel<S: Word + Into<u64>, T: Word>(
        &self,
        ordered: &mut Vec<S>,
        (restore_kernel, place_kernel): Kernels<S, T>,
        out: &mut [T],
    ) -> Option<Result<(), StreamError>> {
        let (tokens, values, raw, width) = (self.tokens, self.values, self.raw, self.width);
        grow(ordered, tokens.len());
        let ordered = &mut ordered[..tokens.len()];
        let mut bit = 0;
        let done = restore_kernel(tokens, values, raw, &mut bit, ordered);
        if done == 0 {
            return None;
        }
        let bits = restore_rest(tokens, values, raw, bit, done, ordered);
        if !place_kernel(ordered, width, self.bands, out) {
            crate::isa::vectorised(
                #[inline(always)]
                || match self.bands {
                    16 => unband::<S, T, 16>(ordered, width, out),
                    32 => unband::<S, T, 32>(ordered, width, out),
                    _ => unband_by(ordered, width, self.bands, out),
                },
            );
        }
        Some(bits.finish("raw bits"))
    }
}

/// Reads the values of `tokens[done..]` (in band order) into `ordered[done..]`, their
/// raw bits from `raw` from bit `bit`, after a kernel read those before; returns the
/// reader, at the end of the last value's bits.
fn restore_rest<'a, S: Word>(
    tokens: &[u8],
    values: &[u32; 256],
    raw: &'a [u8],
    bit: u64,
    done: usize,
    ordered: &mut [S],
) -> BitCursor<'a> {
    let mut bits = BitCursor::at(raw, bit);
    for (o, &token) in ordered[done..].iter_mut().zip(&tokens[done..]) {
        *o = value::<S>(token, values, &mut bits);
    }
    bits
}

/// What decoding a tile's tokens looks up: the context of each pair of neighbours and
/// what each token stands for.
struct Lookup {
    /// See [`token_values`]: class (bits 0 to 7), raw bits (8 to 15), top bits (from 16).
    values: [u32; 256],
    /// The configuration's classes of `up`, their base and refinement.
    cfg: ContextConfig,
    /// Distance to `left` in band order (`G left`).
    left: usize,
    /// Distance to `up` in band order (the row width).
    width: usize,
}

impl Lookup {
    fn new<T: Word>(cfg: ContextConfig, left: usize, width: usize) -> Lookup {
        Lookup {
            values: token_values::<T>(cfg),
            cfg,
            left,
            width,
        }
    }

    /// Decodes the tokens of positions `from..` (a multiple of the band count) into
    /// `tokens`, their classes into `classes`, one band after another.
    fn decode_tokens(
        &self,
        dec: &mut band_rans::Decoder<'_>,
        tables: &[DecodeTable],
        tokens: &mut [u8],
        classes: &mut [u8],
        from: usize,
    ) {
        let bands = dec.bands();
        let mut band = 0;
        for p in from..tokens.len() {
            let left = if p >= self.left {
                classes[p - self.left]
            } else {
                0
            };
            let up = if p >= self.width {
                classes[p - self.width]
            } else {
                left
            };
            let s = dec.get(band, &tables[self.cfg.context(up, left)]);
            tokens[p] = s as u8;
            classes[p] = self.values[s] as u8;
            band += 1;
            if band == bands {
                band = 0;
            }
        }
    }
}

/// Writes the value of each token of `tokens` (in band order of `bands` bands, rows of
/// `width`), its raw bits read from `bits`, to its place in `out`.
fn restore<T: Word>(
    tokens: &[u8],
    values: &[u32; 256],
    bits: &mut BitCursor<'_>,
    width: usize,
    bands: usize,
    out: &mut [T],
) {
    let mut value = |token: u8| value::<T>(token, values, bits);
    if bands == 1 {
        for (o, &token) in out.iter_mut().zip(tokens) {
            *o = value(token);
        }
        return;
    }
    let b = width / bands;
    for (row, tokens) in out.chunks_exact_mut(width).zip(tokens.chunks_exact(width)) {
        for (c, turn) in tokens.chunks_exact(bands).enumerate() {
            for (g, &token) in turn.iter().enumerate() {
                row[g * b + c] = value(token);
            }
        }
    }
}

/// Fewest bytes a coding can take, whatever the number of values: band count and
/// kind, the configuration, one bit per table, the stream length and one state.
pub fn min_encoded_len() -> usize {
    2 + CONFIG_LEN + 1 + 4 + 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coder::testing::{self, laplace, round_trip};
    use crate::coder::Coder;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    testing::shared_coder_tests!(Coder::Banded);

    #[test]
    fn band_order_takes_one_residual_of_each_band_in_turn() {
        let values: Vec<u32> = (0..16).collect();
        assert_eq!(
            to_band_order(&values, 8, 4),
            [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]
        );
        let dims = |width, left| Dims { width, left };
        assert_eq!(bands_for(32, dims(8, 1)), 8);
        assert_eq!(bands_for(MIN_RESIDUALS_32 - 64, dims(64, 1)), 16);
        assert_eq!(bands_for(MIN_RESIDUALS_32, dims(64, 1)), 32);
        // 24 would leave 2 elements per band row.
        assert_eq!(bands_for(48 * 2000, dims(48, 1)), 16);
        assert_eq!(bands_for(36, dims(12, 1)), 4);
        assert_eq!(bands_for(33, dims(8, 1)), 1);
        assert_eq!(bands_for(30, dims(10, 1)), 2);
        // Rows of 1640 words: 20 bands of 41 complex numbers, or 10 bands of elements
        // of 8 words (20 would leave 10.25); at most 16 below 32 bands' residual count.
        assert_eq!(bands_for(11 * 1640, dims(1640, 2)), 20);
        assert_eq!(bands_for(11 * 1640, dims(1640, 8)), 10);
        assert_eq!(bands_for(8 * 1640, dims(1640, 2)), 10);
    }

    /// Tiles of 8 to 32 bands (whole registers of the vector kernels and part used
    /// ones), long enough for the vector kernel, of each word size decode exactly.
    #[test]
    fn every_band_count_round_trips() {
        let mut rng = SmallRng::seed_from_u64(21);
        for (width, words, bands) in [
            (16usize, 40_000, 16u8),
            (64, 12_000, 16),
            (64, 40_000, 32),
            (4096, 40_000, 32),
            (32, 70_000, 32),
            (4096, 70_000, 32),
            (24, 40_000, 8),
            (204, 40_000, 12),
            (1640, 40_000, 20),
            (1200, 40_000, 30),
        ] {
            let n = width * (words / width);
            let out = round_trip::<u32>(Coder::Banded, &laplace(&mut rng, n, 24), width);
            assert_eq!(out[..2], [bands, KIND_LENGTHS]);
            round_trip::<u64>(Coder::Banded, &laplace(&mut rng, n, 64), width);
            round_trip::<u16>(Coder::Banded, &laplace(&mut rng, n, 16), width);
            round_trip::<u8>(Coder::Banded, &laplace(&mut rng, n, 8), width);
        }
    }

    #[test]
    fn float_fields_round_trip_banded() {
        let mut rng = SmallRng::seed_from_u64(23);
        let values: Vec<u32> = (0..65_536)
            .map(|_| (rand::Rng::gen::<f32>(&mut rng) - 0.5).to_bits())
            .collect();
        let dims = testing::dims(512);
        let mut out = Vec::new();
        encode_fields(&values, dims, float_fields::zero_order(&values), &mut out);
        assert_eq!(out[..2], [32, KIND_FIELDS]);
        let mut back = vec![0u32; values.len()];
        decode(&out, dims, &mut back).unwrap();
        assert_eq!(back, values);
    }

    /// The same tables and tokens as coder 4's, so the size is coder 4's within the
    /// extra states and a few `left` contexts per row.
    #[test]
    fn size_tracks_coder_4() {
        let mut rng = SmallRng::seed_from_u64(5);
        let values: Vec<u32> = laplace(&mut rng, 131_072, 18);
        let banded = round_trip::<u32>(Coder::Banded, &values, 8192).len();
        let plain = round_trip::<u32>(Coder::ContextAns, &values, 8192).len();
        assert!(
            banded.abs_diff(plain) < plain / 1000 + 64,
            "{banded} vs {plain}"
        );
    }

    #[test]
    fn band_counts_that_do_not_cut_whole_rows_are_errors() {
        let mut rng = SmallRng::seed_from_u64(29);
        let values: Vec<u32> = laplace(&mut rng, 4096, 12);
        let mut out = Vec::new();
        encode(&values, testing::dims(64), &mut out);
        let mut back = vec![0u32; values.len()];
        for (bands, width) in [(0u8, 64usize), (33, 64), (16, 40), (3, 64)] {
            let mut bad = out.clone();
            bad[0] = bands;
            assert_eq!(
                decode(&bad, testing::dims(width), &mut back).unwrap_err(),
                StreamError::Invalid("band count does not cut the tile's rows into whole bands"),
                "{bands} bands of rows of {width}"
            );
        }
        let mut bad = out.clone();
        bad[1] = 2;
        assert_eq!(
            decode(&bad, testing::dims(64), &mut back).unwrap_err(),
            StreamError::Invalid("unknown banded token kind")
        );
        // A tile that is not whole rows cannot have several bands.
        assert!(decode(&out, testing::dims(64), &mut back[..4000]).is_err());
    }
}
