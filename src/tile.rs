//! Coding one tile: predictor along time, residual map, residual coder.
//!
//! Tile payload: `[predictor id] [map id << 4 | coder id] [coder output]`. The residuals
//! of every word of the tile, in row order (plane by plane), are computed first and
//! handed to the coder as one slice. With `auto`, the combination is chosen per tile
//! from an estimate on a sample of the tile's columns, and recorded in the payload.

use std::ops::Range;

use crate::buffers;
use crate::coder::{dict, Coder, Dims};
use crate::error::{Error, Result};
use crate::format::RowDigest;
use crate::layout::{Geometry, Tile};
use crate::params::Candidates;
use crate::predict::{Predictor, RowPredictor};
use crate::residual::{MapOp, ResidualMap, RotateSubtractOp, SubtractOp, XorOp};
use crate::word::Word;

/// Bytes of the per-tile header.
pub const TILE_HEADER_LEN: usize = 2;
/// How much of a tile is sampled to choose a coding automatically: about `words` words,
/// in column segments of at least `least` columns.
#[derive(Debug, Clone, Copy)]
struct Sampling {
    words: usize,
    least: usize,
}

/// Fast mode's sampling: one 32-word group per row and segment. Half the words of
/// archive mode's made compression 5-10% faster at the same ratios on the shared HERA
/// files (the generated observation: 0.7686 -> 0.7689), measured.
const FAST_SAMPLING: Sampling = Sampling {
    words: 1 << 11,
    least: 32,
};

/// Archive mode's sampling: narrow segments over more rows, for the context coders.
const ARCHIVE_SAMPLING: Sampling = Sampling {
    words: 1 << 12,
    least: 8,
};
/// Column segments the sample is spread over.
const SAMPLE_SEGMENTS: usize = 8;

/// One predictor / map / coder combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Coding {
    /// Predictor along the time axis.
    pub predictor: Predictor,
    /// Residual map.
    pub map: ResidualMap,
    /// Residual coder.
    pub coder: Coder,
    /// The first row of each plane is predicted from its neighbour along the innermost
    /// element axis (as Lorenzo does) instead of from zero. Recorded as bit 7 of the
    /// predictor byte.
    pub spatial_head: bool,
}

impl Coding {
    /// (Lorenzo's spatial term applies to predicted rows, rows without a time
    /// prediction are predicted spatially) for a chunk whose innermost axis is `spatial`:
    /// the one place encoder and decoder learn both.
    fn spatial_rows(self, spatial: Spatial) -> (bool, bool) {
        let axis = spatial.stride > 0;
        let lorenzo = self.predictor == Predictor::Lorenzo && axis;
        (lorenzo, (lorenzo || self.spatial_head) && axis)
    }
}

/// Bit of the predictor byte that records [`Coding::spatial_head`].
const SPATIAL_HEAD_BIT: u8 = 0x80;

/// Where Lorenzo finds a word's neighbour along the innermost element axis: `stride`
/// words back, within runs of `run` words that start at multiples of `run` in a row.
/// A stride of 0 means there is no such axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spatial {
    /// Words between neighbours.
    pub stride: usize,
    /// Words per run of the innermost axis.
    pub run: usize,
}

/// Mutable access to the rows of one tile being decoded, wherever they lie in memory.
pub trait TileRows {
    /// The first `len` bytes of row `j` of the tile's plane `k`.
    fn row(&mut self, k: usize, j: usize, len: usize) -> &mut [u8];
}

/// Tile rows at fixed strides in one buffer (tiles that span whole rows).
pub struct StridedRows<'a> {
    /// The buffer, starting at the tile's first byte.
    pub buf: &'a mut [u8],
    /// Bytes from one row to the next.
    pub row_stride: usize,
    /// Bytes from one plane to the next.
    pub plane_stride: usize,
}

impl TileRows for StridedRows<'_> {
    fn row(&mut self, k: usize, j: usize, len: usize) -> &mut [u8] {
        let at = k * self.plane_stride + j * self.row_stride;
        &mut self.buf[at..at + len]
    }
}

/// Tile rows as separate disjoint slices (tiles that split rows by columns; one plane).
pub struct RowSegments<'a> {
    /// The tile's rows in order.
    pub rows: Vec<&'a mut [u8]>,
}

impl TileRows for RowSegments<'_> {
    fn row(&mut self, _k: usize, j: usize, len: usize) -> &mut [u8] {
        &mut self.rows[j][..len]
    }
}

/// Appends the payload of `tile` of chunk `src` to `out`: coded with the only candidate
/// when there is one, else with the candidate estimated smallest on a sample of the
/// tile.
pub fn encode_tile_into<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    candidates: &Candidates,
    spatial: Spatial,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    let coding = choose::<T>(src, g, tile, candidates, spatial);
    let cols = tile.col0..tile.col1;
    let dims = Dims::of(tile, spatial);
    T::with_scratch(|chosen| {
        residuals_into(src, g, tile, coding, spatial, cols.clone(), chosen);
        encode_with(coding, chosen, dims, out);
        if let Some(generic) = candidates.generic {
            try_generic(coding, generic, chosen, dims, start, out);
        }
        if candidates.try_alternatives {
            // The patched estimate is exact.
            let bits = Coder::Patched.estimate_bits(chosen, dims);
            if (TILE_HEADER_LEN as u64) + bits / 8 < (out.len() - start) as u64 {
                let packed = Coding {
                    coder: Coder::Patched,
                    ..coding
                };
                out.truncate(start);
                encode_with(packed, chosen, dims, out);
            }
        }
    });
    if !candidates.try_alternatives {
        return;
    }
    // Seed 003: the words themselves as dictionary symbols, when there are few.
    let raw = Coding {
        predictor: Predictor::Zero,
        map: ResidualMap::Xor,
        coder: Coder::Dictionary,
        spatial_head: false,
    };
    // Most tiles have thousands of distinct words: a few columns tell, before the
    // whole tile is copied.
    let probe = tile.col0..(tile.col0 + 16).min(tile.col1);
    if dict::distinct(&residuals::<T>(src, g, tile, raw, spatial, probe)).is_none() {
        return;
    }
    let words = residuals::<T>(src, g, tile, raw, spatial, cols);
    if dict::distinct(&words).is_none() {
        return;
    }
    let mut alternative = buffers::take(max_payload_len::<T>(words.len()));
    encode_with(raw, &words, dims, &mut alternative);
    if alternative.len() < out.len() - start {
        out.truncate(start);
        out.extend_from_slice(&alternative);
    }
    buffers::give(alternative);
}

/// Words of the chosen residuals a general-purpose coder is first tried on.
const GENERIC_SAMPLE: usize = 1 << 13;
/// The general-purpose coder is tried on the whole tile when its sample codes in less
/// than this fraction (in 64ths) of the chosen coding's share.
const GENERIC_GAIN_64THS: u64 = 56;

/// Recodes the tile payload `out[start..]` (the chosen `coding` of `residuals`) with the
/// general-purpose coder `generic` when that is smaller: tried in full only when a sample
/// from the middle of the tile codes clearly smaller than its share of the payload, so
/// tiles it does not help cost one small trial.
fn try_generic<T: Word>(
    coding: Coding,
    generic: Coder,
    residuals: &[T],
    dims: Dims,
    start: usize,
    out: &mut Vec<u8>,
) {
    let n = residuals.len();
    if n == 0 {
        return;
    }
    let current = (out.len() - start) as u64;
    let take = n.min(GENERIC_SAMPLE);
    let at = (n - take) / 2;
    let sample_bits = generic.estimate_bits(&residuals[at..at + take], dims);
    let share_bits = 8 * current * take as u64 / n as u64;
    if sample_bits * 64 >= share_bits * GENERIC_GAIN_64THS {
        return;
    }
    let mut alternative = buffers::take(max_payload_len::<T>(n));
    encode_with(
        Coding {
            coder: generic,
            ..coding
        },
        residuals,
        dims,
        &mut alternative,
    );
    if (alternative.len() as u64) < current {
        out.truncate(start);
        out.extend_from_slice(&alternative);
    }
    buffers::give(alternative);
}

/// Room for the payload of `words` words whatever the coder: an incompressible tile
/// (the fast coders' worst case is the raw size plus a byte per 32 words), so the
/// coder never reallocates and copies.
pub fn max_payload_len<T: Word>(words: usize) -> usize {
    let raw = words * T::BYTES;
    TILE_HEADER_LEN + raw + raw / 32 + 16
}

/// Appends the tile payload of `residuals` coded as `coding` says to `out`.
fn encode_with<T: Word>(coding: Coding, residuals: &[T], dims: Dims, out: &mut Vec<u8>) {
    out.reserve(max_payload_len::<T>(residuals.len()));
    let head = if coding.spatial_head {
        SPATIAL_HEAD_BIT
    } else {
        0
    };
    out.push(coding.predictor.id() | head);
    out.push(coding.map.id() << 4 | coding.coder.id());
    coding.coder.encode(residuals, dims, out);
}

/// The candidate with the smallest estimated size on a sample of the tile: column
/// segments spread evenly across it, all rows. Greedy choice takes the best predictor
/// and map first, then decides on the spatial head for them.
fn choose<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    candidates: &Candidates,
    spatial: Spatial,
) -> Coding {
    let all = candidates.all();
    if all.len() == 1 {
        return all[0];
    }
    let cols = tile.col1 - tile.col0;
    let sampling = if candidates.greedy {
        ARCHIVE_SAMPLING
    } else {
        FAST_SAMPLING
    };
    // Deep tiles are sampled over their middle rows only (of their first planes), so the
    // sample stays near `sampling.words` however many time steps a tile holds.
    let sample = sample_rows(tile, sampling);
    let rows = (sample.row1 - sample.row0) * (sample.plane1 - sample.plane0);
    let width =
        (sampling.words / SAMPLE_SEGMENTS / rows.max(1)).clamp(cols.min(sampling.least), cols);
    let segments = SAMPLE_SEGMENTS.min(cols / width);
    let starts: Vec<usize> = (0..segments)
        .map(|i| tile.col0 + (cols - width) * i / (segments - 1).max(1))
        .collect();
    let dims = Dims {
        width,
        left: spatial.stride.max(1),
    };
    let estimate = |coding: Coding| -> u64 {
        starts
            .iter()
            .map(|&start| {
                let residuals =
                    residuals::<T>(src, g, &sample, coding, spatial, start..start + width);
                coding.coder.estimate_bits(&residuals, dims)
            })
            .sum()
    };
    let best_of = |options: Vec<Coding>| {
        options
            .into_iter()
            .map(|c| (estimate(c), c))
            .min_by_key(|&(bits, _)| bits)
            .expect("at least one candidate")
            .1
    };
    if !candidates.greedy {
        return best_of(all);
    }
    let best = best_of(all.into_iter().filter(|c| !c.spatial_head).collect());
    best_of(
        (candidates.heads.iter())
            .map(|&spatial_head| Coding {
                spatial_head,
                ..best
            })
            .collect(),
    )
}

/// Fewest rows a sample keeps per plane (predictors with a history of up to 8 rows
/// settle within them).
const SAMPLE_MIN_ROWS: usize = 16;

/// The part of `tile` a coding's sample covers: all of it unless it has more rows than
/// `sampling.words` spreads over [`SAMPLE_SEGMENTS`] segments of `sampling.least` columns
/// (at least [`SAMPLE_MIN_ROWS`] of them), then as many of its middle rows, in its first
/// planes.
fn sample_rows(tile: &Tile, sampling: Sampling) -> Tile {
    let budget = (sampling.words / SAMPLE_SEGMENTS / sampling.least).max(SAMPLE_MIN_ROWS);
    let rows = (tile.row1 - tile.row0).min(budget);
    let planes = (tile.plane1 - tile.plane0).min(budget / rows).max(1);
    let row0 = tile.row0 + (tile.row1 - tile.row0 - rows) / 2;
    Tile {
        row0,
        row1: row0 + rows,
        plane1: tile.plane0 + planes,
        ..*tile
    }
}

/// Residuals of columns `cols` of `tile`, row by row, plane by plane.
fn residuals<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    coding: Coding,
    spatial: Spatial,
    cols: Range<usize>,
) -> Vec<T> {
    let mut out = Vec::new();
    residuals_into(src, g, tile, coding, spatial, cols, &mut out);
    out
}

/// [`residuals`] into `out` (cleared first).
fn residuals_into<T: Word>(
    src: &[u8],
    g: &Geometry,
    tile: &Tile,
    coding: Coding,
    spatial: Spatial,
    cols: Range<usize>,
    out: &mut Vec<T>,
) {
    out.clear();
    let args = (src, g, tile, coding, spatial, cols);
    match coding.map {
        ResidualMap::Xor => residuals_with::<T, XorOp>(args, out),
        ResidualMap::RotateSubtract => residuals_with::<T, RotateSubtractOp>(args, out),
        ResidualMap::Subtract => residuals_with::<T, SubtractOp>(args, out),
    }
}

type EncodeArgs<'a> = (
    &'a [u8],
    &'a Geometry,
    &'a Tile,
    Coding,
    Spatial,
    Range<usize>,
);

fn residuals_with<T: Word, M: MapOp>(
    (src, g, tile, coding, spatial, cols): EncodeArgs,
    out: &mut Vec<T>,
) {
    let w = T::BYTES;
    let predictor = coding.predictor;
    let (lorenzo, spatial_first) = coding.spatial_rows(spatial);
    out.reserve(g.tile_words(tile));
    let mut rp = RowPredictor::<T>::new(predictor);
    for plane in tile.plane0..tile.plane1 {
        rp.reset();
        for row in tile.row0..tile.row1 {
            let width = g.row_len(row).min(cols.end).saturating_sub(cols.start);
            if width == 0 {
                break;
            }
            let at = g.offset(plane, row, cols.start) * w;
            let words = src[at..at + width * w].chunks_exact(w);
            let mut cur = rp.take_row(width);
            let s = spatial.stride;
            let prediction = rp.predict(width);
            if let (Some(p), false) = (prediction, lorenzo) {
                // The common case in one pass: each word read once, kept as history and
                // its residual appended (not zeroed first).
                out.extend(cur.iter_mut().zip(words).zip(p).map(|((c, x), &p)| {
                    let m = M::to_int(T::load(x));
                    *c = m;
                    M::residual(m, p)
                }));
                rp.observe(cur);
                continue;
            }
            let start = out.len();
            out.resize(start + width, T::default());
            let dst = &mut out[start..];
            for (c, x) in cur.iter_mut().zip(words) {
                *c = M::to_int(T::load(x));
            }
            match prediction {
                None if spatial_first => {
                    for run in runs(cols.start, width, spatial) {
                        for c in run.clone() {
                            let p = if c >= run.start + s {
                                cur[c - s]
                            } else {
                                T::default()
                            };
                            dst[c] = M::residual(cur[c], p);
                        }
                    }
                }
                None => {
                    for (d, &m) in dst.iter_mut().zip(&cur) {
                        *d = M::residual(m, T::default());
                    }
                }
                // Lorenzo (the plain time prediction took the one-pass loop above).
                Some(p) => {
                    for run in runs(cols.start, width, spatial) {
                        let head = run.start..(run.start + s).min(run.end);
                        for c in head.clone() {
                            dst[c] = M::residual(cur[c], p[c]);
                        }
                        for c in head.end..run.end {
                            let predicted = lorenzo_prediction(p[c], cur[c - s], p[c - s]);
                            dst[c] = M::residual(cur[c], predicted);
                        }
                    }
                }
            }
            rp.observe(cur);
        }
    }
}

/// Lorenzo's prediction of a value from its time prediction `now`, its neighbour along
/// the innermost axis `left`, and the neighbour's time prediction `back`.
#[inline(always)]
fn lorenzo_prediction<T: Word>(now: T, left: T, back: T) -> T {
    now.wrapping_add(left).wrapping_sub(back)
}

/// Restores `seg[i]` for `i` from `s` on, in order, from its residual `res[i]` and its
/// neighbour `s` values back (the first `s` values are restored already): Lorenzo's
/// `M::restore(res[i], pred[i] + seg[i - s] - pred[i - s])` with a time prediction
/// `pred`, or `M::restore(res[i], seg[i - s])` without one. Strides of 1, 2 and 4 keep
/// the last `s` values in registers and walk the slices in whole steps of `s`, with no
/// bounds check or index arithmetic per value.
///
/// For an additive map (see [`ResidualMap::is_additive`]) with a stride of 1, 2 or 4
/// the recurrence is a strided prefix sum of `M::restore(res[i], pred[i] - pred[i - s])`
/// (or `M::restore(res[i], 0)`): both passes vectorise, where the plain loop waits
/// for each value before the next.
#[inline(never)]
fn recur<T: Word, M: MapOp>(seg: &mut [T], s: usize, res: &[T], pred: Option<&[T]>) {
    if M::ADDITIVE && matches!(s, 1 | 2 | 4) {
        return crate::isa::vectorised(
            #[inline(always)]
            || match s {
                1 => recur_additive::<T, M, 1>(seg, res, pred),
                2 => recur_additive::<T, M, 2>(seg, res, pred),
                _ => recur_additive::<T, M, 4>(seg, res, pred),
            },
        );
    }
    match s {
        1 => recur_by::<T, M, 1>(seg, res, pred),
        2 => recur_by::<T, M, 2>(seg, res, pred),
        4 => recur_by::<T, M, 4>(seg, res, pred),
        _ => {
            for i in s..seg.len() {
                let left = seg[i - s];
                let p = pred.map_or(left, |p| lorenzo_prediction(p[i], left, p[i - s]));
                seg[i] = M::restore(res[i], p);
            }
        }
    }
}

#[inline(always)]
fn recur_by<T: Word, M: MapOp, const S: usize>(seg: &mut [T], res: &[T], pred: Option<&[T]>) {
    let n = seg.len();
    let Some((first, rest)) = seg.split_first_chunk_mut::<S>() else {
        return;
    };
    let mut last = *first;
    let whole = (n - S) / S * S;
    let (body, tail) = rest.split_at_mut(whole);
    let res_body = &res[S..S + whole];
    match pred {
        None => {
            for (v, r) in body.chunks_exact_mut(S).zip(res_body.chunks_exact(S)) {
                for k in 0..S {
                    last[k] = M::restore(r[k], last[k]);
                    v[k] = last[k];
                }
            }
        }
        Some(p) => {
            let steps = body.chunks_exact_mut(S).zip(res_body.chunks_exact(S)).zip(
                p[S..S + whole]
                    .chunks_exact(S)
                    .zip(p[..whole].chunks_exact(S)),
            );
            for ((v, r), (now, back)) in steps {
                for k in 0..S {
                    let predicted = lorenzo_prediction(now[k], last[k], back[k]);
                    last[k] = M::restore(r[k], predicted);
                    v[k] = last[k];
                }
            }
        }
    }
    for (k, v) in tail.iter_mut().enumerate() {
        let i = S + whole + k;
        let predicted = pred.map_or(last[k], |p| lorenzo_prediction(p[i], last[k], p[i - S]));
        *v = M::restore(res[i], predicted);
    }
}

/// [`recur`] for an additive map and a stride `S` of 1, 2 or 4: each value's own part
/// of its restore first, then the strided prefix sum that adds the neighbours.
#[inline(always)]
fn recur_additive<T: Word, M: MapOp, const S: usize>(seg: &mut [T], res: &[T], pred: Option<&[T]>) {
    let n = seg.len();
    if n <= S {
        return;
    }
    let (seg_body, res_body) = (&mut seg[S..], &res[S..n]);
    match pred {
        None => {
            for (v, &r) in seg_body.iter_mut().zip(res_body) {
                *v = M::restore(r, T::default());
            }
        }
        Some(p) => {
            let steps = seg_body
                .iter_mut()
                .zip(res_body)
                .zip(&p[S..n])
                .zip(&p[..n - S]);
            for (((v, &r), &now), &back) in steps {
                *v = M::restore(r, now.wrapping_sub(back));
            }
        }
    }
    strided_prefix_sum::<T, S>(seg);
}

/// Adds `seg[i - S]` to each `seg[i]` from `S` on, in order (wrapping): each value
/// becomes the sum of itself and every `S`-th value before it. Blocks of [`SCAN_LANES`]
/// values are summed in registers by doubling shifts, then the sums of the blocks before
/// (the carry) are added. `S` divides the lanes.
#[inline(always)]
fn strided_prefix_sum<T: Word, const S: usize>(seg: &mut [T]) {
    // The sums of the last block's final `S` values, repeated across the lanes.
    let mut carry = [T::default(); SCAN_LANES];
    let mut blocks = seg.chunks_exact_mut(SCAN_LANES);
    for block in &mut blocks {
        let mut x: [T; SCAN_LANES] = std::array::from_fn(|i| block[i]);
        let mut shift = S;
        while shift < SCAN_LANES {
            let before = x;
            for i in shift..SCAN_LANES {
                x[i] = x[i].wrapping_add(before[i - shift]);
            }
            shift *= 2;
        }
        // The block's own sums, repeated: computed before the carry is added, so the
        // only wait from one block to the next is the carry's one addition.
        let totals: [T; SCAN_LANES] = std::array::from_fn(|i| x[SCAN_LANES - S + i % S]);
        for (v, &c) in x.iter_mut().zip(&carry) {
            *v = v.wrapping_add(c);
        }
        block.copy_from_slice(&x);
        for (c, &t) in carry.iter_mut().zip(&totals) {
            *c = c.wrapping_add(t);
        }
    }
    let tail = blocks.into_remainder();
    for i in 0..tail.len() {
        let left = if i >= S { tail[i - S] } else { carry[i] };
        tail[i] = tail[i].wrapping_add(left);
    }
}

/// Values per block of [`strided_prefix_sum`]: a 512-bit register of 32-bit words.
const SCAN_LANES: usize = 16;

/// The runs of the innermost axis that columns `start..start + width` of a row cross,
/// as index ranges into those columns (one run of everything without such an axis).
fn runs(start: usize, width: usize, spatial: Spatial) -> impl Iterator<Item = Range<usize>> {
    let run = if spatial.stride == 0 {
        usize::MAX
    } else {
        spatial.run
    };
    let first = (run - start % run).min(width);
    std::iter::once(0..first).chain(
        (first..width)
            .step_by(run.max(1))
            .map(move |at| at..(at + run).min(width)),
    )
}

/// The coding a tile payload records, validated.
pub fn parse_coding(payload: &[u8]) -> std::result::Result<Coding, String> {
    if payload.len() < TILE_HEADER_LEN {
        return Err(format!("{} bytes, no tile header", payload.len()));
    }
    let id = payload[0] & !SPATIAL_HEAD_BIT;
    let predictor =
        Predictor::from_id(id.into()).ok_or_else(|| format!("unknown predictor {id}"))?;
    let map = ResidualMap::from_id((payload[1] >> 4).into())
        .ok_or_else(|| format!("unknown residual map {}", payload[1] >> 4))?;
    let coder = Coder::from_id((payload[1] & 15).into())
        .ok_or_else(|| format!("unknown residual coder {}", payload[1] & 15))?;
    Ok(Coding {
        predictor,
        map,
        coder,
        spatial_head: payload[0] & SPATIAL_HEAD_BIT != 0,
    })
}

/// Decodes tile number `index` from `payload` into `rows`; the tile's digest (see
/// [`crate::format::tile_digest`]), hashed row by row as they are written.
pub fn decode_tile<T: Word>(
    payload: &[u8],
    g: &Geometry,
    tile: &Tile,
    index: usize,
    rows: &mut impl TileRows,
    spatial: Spatial,
) -> Result<u64> {
    let corrupt = |reason: String| Error::CorruptBlock { index, reason };
    let coding = parse_coding(payload).map_err(corrupt)?;
    T::with_scratch(|residuals| {
        // No need to zero the reused words: every coder writes each value it decodes
        // (the coders' shared tests decode into a buffer of ones).
        residuals.resize(g.tile_words(tile), T::default());
        coding
            .coder
            .decode(
                &payload[TILE_HEADER_LEN..],
                Dims::of(tile, spatial),
                residuals,
            )
            .map_err(corrupt)?;
        let args = (&residuals[..], g, tile, coding, spatial);
        let mut digest = RowDigest::new();
        // The restore loops compiled for the CPU's widest vectors.
        crate::isa::vectorised(
            #[inline(always)]
            || match coding.map {
                ResidualMap::Xor => restore_with::<T, XorOp>(args, rows, &mut digest),
                ResidualMap::RotateSubtract => {
                    restore_with::<T, RotateSubtractOp>(args, rows, &mut digest)
                }
                ResidualMap::Subtract => restore_with::<T, SubtractOp>(args, rows, &mut digest),
            },
        );
        Ok(digest.finish())
    })
}

type DecodeArgs<'a, T> = (&'a [T], &'a Geometry, &'a Tile, Coding, Spatial);

#[inline(always)]
fn restore_with<T: Word, M: MapOp>(
    (mut residuals, g, tile, coding, spatial): DecodeArgs<T>,
    rows: &mut impl TileRows,
    digest: &mut RowDigest,
) {
    let w = T::BYTES;
    let predictor = coding.predictor;
    let (lorenzo, spatial_first) = coding.spatial_rows(spatial);
    let mut rp = RowPredictor::<T>::new(predictor);
    for k in 0..tile.plane1 - tile.plane0 {
        rp.reset();
        for j in 0..tile.row1 - tile.row0 {
            let width = g.tile_row_width(tile, tile.row0 + j);
            if width == 0 {
                break;
            }
            let (r, rest) = residuals.split_at(width);
            residuals = rest;
            // Every arm below writes all `width` values of `cur`.
            let mut cur = rp.take_row(width);
            let out = rows.row(k, j, width * w);
            let s = spatial.stride;
            // Whether the arm stored the row already.
            let stored = match rp.predict(width) {
                None if spatial_first => {
                    for run in runs(tile.col0, width, spatial) {
                        let (seg, res) = (&mut cur[run.clone()], &r[run]);
                        let head = s.min(seg.len());
                        for (v, &r) in seg.iter_mut().zip(res).take(head) {
                            *v = M::restore(r, T::default());
                        }
                        recur::<T, M>(seg, s, res, None);
                    }
                    false
                }
                None => {
                    for (v, &r) in cur.iter_mut().zip(r) {
                        *v = M::restore(r, T::default());
                    }
                    false
                }
                Some(p) if lorenzo => {
                    for run in runs(tile.col0, width, spatial) {
                        let (seg, res, p) = (&mut cur[run.clone()], &r[run.clone()], &p[run]);
                        let head = s.min(seg.len());
                        for ((v, &r), &p) in seg.iter_mut().zip(res).zip(p).take(head) {
                            *v = M::restore(r, p);
                        }
                        recur::<T, M>(seg, s, res, Some(p));
                    }
                    false
                }
                Some(p) => {
                    // The common case: restore, keep for the next prediction and store
                    // in one pass.
                    let restored = cur.iter_mut().zip(r).zip(p);
                    for (((v, &r), &p), dst) in restored.zip(out.chunks_exact_mut(w)) {
                        *v = M::restore(r, p);
                        M::from_int(*v).store(dst);
                    }
                    true
                }
            };
            if !stored {
                for (dst, &m) in out.chunks_exact_mut(w).zip(&cur) {
                    M::from_int(m).store(dst);
                }
            }
            digest.update(out);
            rp.observe(cur);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(planes: usize, rows: usize) -> Tile {
        Tile {
            plane0: 3,
            plane1: 3 + planes,
            row0: 10,
            row1: 10 + rows,
            col0: 5,
            col1: 900,
        }
    }

    #[test]
    fn deep_tiles_are_sampled_over_their_middle_rows() {
        // Fast mode: 2048 words over 8 segments of 32 columns is 8 rows; at least 16.
        assert_eq!(sample_rows(&tile(1, 8), FAST_SAMPLING), tile(1, 8));
        assert_eq!(sample_rows(&tile(4, 8), FAST_SAMPLING), tile(2, 8));
        let deep = sample_rows(&tile(1, 128), FAST_SAMPLING);
        assert_eq!((deep.row0, deep.row1), (10 + 56, 10 + 72));
        // Archive mode: 4096 words over 8-column segments is 64 rows.
        let deep = sample_rows(&tile(3, 128), ARCHIVE_SAMPLING);
        assert_eq!((deep.row0, deep.row1, deep.plane1), (10 + 32, 10 + 96, 4));
        assert_eq!((deep.col0, deep.col1), (5, 900));
    }

    #[test]
    fn recurrences_of_every_stride_match_the_plain_loop() {
        // Lengths past several scan blocks, with every tail; both word sizes.
        fn check<T: Word, M: MapOp>(name: &str) {
            let word = |i: usize, k: u64| {
                T::from_u64((i as u64 ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 3)
            };
            for s in 1..=5 {
                for len in 0..100 {
                    let residuals: Vec<T> = (0..len).map(|i| word(i, 1)).collect();
                    let pred: Vec<T> = (0..len).map(|i| word(i, 7)).collect();
                    let head: Vec<T> = (0..len).map(|i| word(i, 3)).collect();
                    for lorenzo in [false, true] {
                        let mut fast = head.clone();
                        let p = lorenzo.then_some(&pred[..]);
                        recur::<T, M>(&mut fast, s, &residuals, p);
                        let mut plain = head.clone();
                        for i in s..len {
                            let left = plain[i - s];
                            let predicted = if lorenzo {
                                pred[i].wrapping_add(left).wrapping_sub(pred[i - s])
                            } else {
                                left
                            };
                            plain[i] = M::restore(residuals[i], predicted);
                        }
                        let bits = T::BITS;
                        assert_eq!(
                            fast, plain,
                            "{name} {bits}, stride {s}, length {len}, {lorenzo}"
                        );
                    }
                }
            }
        }
        check::<u32, XorOp>("xor");
        check::<u32, SubtractOp>("subtract");
        check::<u32, RotateSubtractOp>("rotate-subtract");
        check::<u64, XorOp>("xor");
        check::<u64, SubtractOp>("subtract");
        check::<u64, RotateSubtractOp>("rotate-subtract");
    }
}
