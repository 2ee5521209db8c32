//! Which chunk the encoder keeps: the tiled chunk, or a brief one (stored, or coded whole
//! by a general-purpose pipeline) when that is smaller. The candidates are coded and
//! measured, so the kept chunk is never larger than any of them.

use std::borrow::Cow;

use super::pipeline::{self, Compressor, Effort, Pipeline, Transform, STORED};
use crate::buffers;
use crate::format;
use crate::params::{Mode, Params, HEAVY_LEVEL, MAX_LEVEL};

/// Chunks of at most this many bytes are their own sample: every trial codes them whole.
const WHOLE_SAMPLE_BYTES: usize = 1 << 17;
/// A larger chunk's sample is this fraction of it (at least [`WHOLE_SAMPLE_BYTES`], at
/// most [`SAMPLE_MAX_BYTES`]).
const SAMPLE_SHARE: usize = 16;
/// Most bytes of a sample here, and of the part of a chunk the encoder's layout trials
/// code (see `compress`): a million words say what a sixteenth or an eighth of a larger
/// chunk would, and each trial's copies of it (gathered or shuffled bytes, scaled
/// integers, codings) stay small beside the chunk.
pub(crate) const SAMPLE_MAX_BYTES: usize = 4 << 20;
/// The heavy compressors' gain over Zstandard 3 is first measured on this fraction of
/// the sample (the middle), when that is at least [`PART_LEAST_BYTES`].
const PART_SHARE: usize = 4;
/// Fast mode samples whole pieces of this many bytes (a multiple of every unit and of the
/// Bitshuffle filter's blocks).
const PIECE_BYTES: usize = 1 << 13;
/// The fewest pieces fast mode samples from a chunk of at least twice as many.
const LEAST_PIECES: usize = 2;
/// The smallest part of a sample a gain is measured on.
const PART_LEAST_BYTES: usize = 1 << 14;
/// A heavy compressor whose gain on the part puts its estimate for the chunk within
/// 1/this above the room is still tried on the whole sample (the gain on a part may
/// fall short of the gain on the whole).
const PART_SLACK: usize = 16;

/// A pipeline to code a chunk with in full, at an effort, with its payload where a trial
/// already coded the whole chunk.
type Trial = (Pipeline, Effort, Option<Vec<u8>>);

/// The brief chunk of `data` (of `shape` in words) that is smaller than `tiled_len`
/// bytes (the chunk as tiles code it), the smallest of those the effort level of
/// `params` tries; `None` when none is.
pub(crate) fn smallest(
    tiled_len: usize,
    data: &[u8],
    shape: &[usize],
    params: &Params,
) -> Option<Vec<u8>> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let header_len = format::brief_header_len(&shape, data.len() as u64);
    let w = params.word_size;
    let mut best: Option<(Pipeline, Vec<u8>)> = None;
    let mut best_len = tiled_len;
    if header_len + data.len() < best_len {
        best_len = header_len + data.len();
        best = Some((STORED, Vec::new()));
    }
    for (p, effort, coded) in full_trials(data, params, best_len.saturating_sub(header_len)) {
        let payload = coded.unwrap_or_else(|| pipeline::encode(data, w, p, effort));
        let bounded = data.len() as u64 <= pipeline::max_decoded_len(p.compressor, payload.len());
        if bounded && header_len + payload.len() < best_len {
            best_len = header_len + payload.len();
            best = Some((p, payload));
        }
    }
    let (p, payload) = best?;
    let payload = (p != STORED).then_some(payload);
    super::brief_chunk(data, w, &shape, params.element_type, p, payload)
}

/// The pipelines to code `data` with in full, given that the payload must come under
/// `room` bytes to be kept: none when a predictor or coder was requested; at level 9,
/// every pipeline of the mode at full effort; at levels 1 to 3, none; otherwise, of the
/// Bitshuffle filter's coding of the values as the filter sees them (elements of complex
/// data, else words) and, in fast mode, LZ4 after a byte shuffle of words: in fast mode
/// the finalists of trials on evenly spaced pieces of the chunk ([`finalists`]); in
/// archive mode those a trial on a sample of the chunk (the whole of a small one)
/// estimates under `room`, and Zstandard at level 3 after the best of no shuffle and the
/// byte shuffles when its trial comes under `room`. Archive mode also tries heavier
/// compressors when that Zstandard 3 trial comes under `room` and, from level 7 on, when
/// it comes within 1/8 of `room`: Zstandard at level 19 and bzip2 after that transform,
/// each when its gain over Zstandard 3 on the middle quarter of a sample of 64 KiB or
/// more puts it within 1/16 of `room`, and its own trial on the sample then comes under
/// `room`.
fn full_trials(data: &[u8], params: &Params, room: usize) -> Vec<Trial> {
    let w = params.word_size;
    let complex = params.components == 2;
    let mut transforms = vec![Transform::None, Transform::Words];
    let mut units = vec![Transform::Words];
    if complex {
        transforms.push(Transform::Elements);
        units.push(Transform::Elements);
    }
    let with = |transforms: &[Transform], compressor| {
        transforms
            .iter()
            .map(move |&transform| Pipeline {
                transform,
                compressor,
            })
            .collect::<Vec<_>>()
    };
    let fits = |p: &Pipeline| p.fits(data.len(), w);
    // A requested predictor or coder is a request for the tiled coding it names.
    if params.predictor.is_some() || params.coder.is_some() {
        return Vec::new();
    }
    let level = params.effort_level();
    match level {
        1..=3 => return Vec::new(),
        MAX_LEVEL => {
            let mut all = match params.mode {
                Mode::Fast => [
                    with(
                        &[transforms.as_slice(), &[Transform::Bits]].concat(),
                        Compressor::Lz4,
                    ),
                    with(&units, Compressor::Bitshuffle),
                ]
                .concat(),
                Mode::Archive => [
                    with(&transforms, Compressor::Zstd),
                    with(&transforms[1..], Compressor::ByteDeltaZstd),
                    with(&transforms, Compressor::Lzma),
                    with(&transforms, Compressor::Bzip2),
                    with(&[Transform::Bits], Compressor::Zstd),
                    with(&units, Compressor::Bitshuffle),
                ]
                .concat(),
            };
            all.retain(fits);
            return all.into_iter().map(|p| (p, Effort::Full, None)).collect();
        }
        _ => {}
    }
    let sample = sample(data, 2 * w);
    // A pipeline's coding of the sample at `effort`, and its size scaled to the chunk.
    let trial = |p: Pipeline, effort| {
        let coded = pipeline::encode(sample, w, p, effort);
        (coded.len() * data.len() / sample.len().max(1), coded)
    };
    let filter_unit = if complex {
        Transform::Elements
    } else {
        Transform::Words
    };
    let bitshuffle = Pipeline {
        transform: filter_unit,
        compressor: Compressor::Bitshuffle,
    };
    let kept =
        |pipelines: &[Pipeline], effort| under_room(data.len(), sample, pipelines, w, room, effort);
    match params.mode {
        Mode::Fast => {
            let lz4_words = Pipeline {
                transform: Transform::Words,
                compressor: Compressor::Lz4,
            };
            finalists(data, &[lz4_words, bitshuffle], w, room)
        }
        Mode::Archive => {
            let whole = sample.len() == data.len();
            let best = with(&transforms, Compressor::Zstd)
                .into_iter()
                .filter(fits)
                .map(|p| {
                    let (len, coded) = trial(p, Effort::Estimate);
                    (len, p, coded)
                })
                .min_by_key(|&(len, _, _)| len);
            let Some((len, light, coded)) = best else {
                return kept(&[bitshuffle], Effort::Estimate);
            };
            let light_trial =
                (len < room).then(|| (light, Effort::Estimate, whole.then_some(coded)));
            // The heavy compressors are tried when Zstandard 3 already wins (the chunk
            // is coded whole anyway) and, from level 7 on, when it comes near `room`;
            // their own trials on the sample decide, for those whose gain over
            // Zstandard 3 on a part of the sample brings them near `room`.
            let near = len < room || (level >= HEAVY_LEVEL && len < room + room / 8);
            let heavy = if near {
                let transform = light.transform;
                let heavy = [
                    with(&[transform], light.compressor),
                    with(&[transform], Compressor::Bzip2),
                ]
                .concat();
                let promising = match part(sample, 2 * w) {
                    Some(part) => {
                        let light = pipeline::encode(part, w, light, Effort::Estimate).len();
                        heavy
                            .into_iter()
                            .filter(|&p| {
                                let coded = pipeline::encode(part, w, p, Effort::Full).len();
                                len * coded / light.max(1) < room + room / PART_SLACK
                            })
                            .collect()
                    }
                    None => heavy,
                };
                kept(&promising, Effort::Full)
            } else {
                Vec::new()
            };
            [
                light_trial.into_iter().collect(),
                heavy,
                kept(&[bitshuffle], Effort::Estimate),
            ]
            .concat()
        }
    }
}

/// Fast mode's trials of `pipelines` on the pieces of `data` ([`pieces`]): those whose
/// trial comes under `room` (see [`under_room`]).
fn finalists(data: &[u8], pipelines: &[Pipeline], word_size: usize, room: usize) -> Vec<Trial> {
    let sample = pieces(data);
    let kept = under_room(
        data.len(),
        &sample,
        pipelines,
        word_size,
        room,
        Effort::Estimate,
    );
    if let Cow::Owned(pieces) = sample {
        buffers::give(pieces);
    }
    kept
}

/// Those of `pipelines` that fit a chunk of `len` bytes whose coding of `sample` at
/// `effort`, scaled to the chunk, comes under `room`: a whole chunk's trial is its
/// payload (LZ4 and Bitshuffle code alike at every effort), a sample's decides whether
/// to code the chunk in full.
fn under_room(
    len: usize,
    sample: &[u8],
    pipelines: &[Pipeline],
    word_size: usize,
    room: usize,
    effort: Effort,
) -> Vec<Trial> {
    let whole = sample.len() == len;
    pipelines
        .iter()
        .copied()
        .filter(|p| p.fits(len, word_size))
        .filter_map(|p| {
            let coded = pipeline::encode(sample, word_size, p, effort);
            let estimate = coded.len() * len / sample.len().max(1);
            (estimate < room).then(|| (p, effort, whole.then_some(coded)))
        })
        .collect()
}

/// Fast mode's sample of `data`: the whole of a chunk of fewer than 2 pieces of
/// [`PIECE_BYTES`], else evenly spaced whole pieces, one in the middle of each stretch
/// of the chunk, as many as a [`SAMPLE_SHARE`]-th of the pieces, at least
/// [`LEAST_PIECES`] and at most half of them, and no more than [`SAMPLE_MAX_BYTES`].
/// The Bitshuffle filter's blocks of 8 KiB fall whole in a piece, so its trial codes
/// exactly the sampled blocks.
fn pieces(data: &[u8]) -> Cow<'_, [u8]> {
    let total = data.len() / PIECE_BYTES;
    let count = (total / SAMPLE_SHARE)
        .min(SAMPLE_MAX_BYTES / PIECE_BYTES)
        .max(LEAST_PIECES.min(total / 2));
    if count == 0 {
        return Cow::Borrowed(data);
    }
    let stride = total / count;
    let mut sample = buffers::take(count * PIECE_BYTES);
    for i in 0..count {
        let start = (i * stride + stride / 2) * PIECE_BYTES;
        sample.extend_from_slice(&data[start..start + PIECE_BYTES]);
    }
    Cow::Owned(sample)
}

/// The part of `data` the default level's trials code: all of it up to
/// [`WHOLE_SAMPLE_BYTES`], else its middle [`SAMPLE_SHARE`]-th (at least that many
/// bytes, at most [`SAMPLE_MAX_BYTES`]), cut at multiples of `unit` bytes.
fn sample(data: &[u8], unit: usize) -> &[u8] {
    if data.len() <= WHOLE_SAMPLE_BYTES {
        return data;
    }
    let len = (data.len() / SAMPLE_SHARE).clamp(WHOLE_SAMPLE_BYTES, SAMPLE_MAX_BYTES.max(unit))
        / unit
        * unit;
    let start = (data.len() - len) / 2 / unit * unit;
    &data[start..start + len]
}

/// The middle [`PART_SHARE`]-th of `sample`, cut at multiples of `unit` bytes, where
/// that is at least [`PART_LEAST_BYTES`].
fn part(sample: &[u8], unit: usize) -> Option<&[u8]> {
    let len = sample.len() / PART_SHARE / unit * unit;
    let start = (sample.len() - len) / 2 / unit * unit;
    (len >= PART_LEAST_BYTES).then(|| &sample[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_whole_units_from_the_middle() {
        let data = vec![0u8; 4 << 20];
        let part = sample(&data, 8);
        assert_eq!(part.len(), (4 << 20) / 16);
        let start = part.as_ptr() as usize - data.as_ptr() as usize;
        assert_eq!(start, (data.len() - part.len()) / 2);
        assert_eq!(start % 8, 0);
        let small = vec![0u8; 1000];
        assert_eq!(sample(&small, 8).len(), 1000);
        let odd = vec![0u8; WHOLE_SAMPLE_BYTES + 12];
        assert_eq!(sample(&odd, 16).len() % 16, 0);
        // A large chunk's sample is at most SAMPLE_MAX_BYTES, still from the middle.
        let large = vec![0u8; 24 * SAMPLE_MAX_BYTES + 24];
        let part = sample(&large, 24);
        assert_eq!(part.len(), SAMPLE_MAX_BYTES / 24 * 24);
        let start = part.as_ptr() as usize - large.as_ptr() as usize;
        assert_eq!(start, (large.len() - part.len()) / 2 / 24 * 24);
        assert_eq!(pieces(&large).len(), SAMPLE_MAX_BYTES);
    }

    #[test]
    fn fast_samples_are_whole_pieces_from_the_middle_of_equal_stretches() {
        let data: Vec<u8> = (0..40 * PIECE_BYTES)
            .map(|i| (i / PIECE_BYTES) as u8)
            .collect();
        // 40 pieces: 2 sampled, the middles of pieces 0-19 and 20-39.
        let sample = pieces(&data);
        assert_eq!(sample.len(), 2 * PIECE_BYTES);
        assert!(sample[..PIECE_BYTES].iter().all(|&b| b == 10));
        assert!(sample[PIECE_BYTES..].iter().all(|&b| b == 30));
        // 64 pieces and a tail: 4 sampled, one from each stretch of 16.
        let data: Vec<u8> = (0..64 * PIECE_BYTES + 5)
            .map(|i| (i / PIECE_BYTES) as u8)
            .collect();
        let firsts: Vec<u8> = pieces(&data).chunks(PIECE_BYTES).map(|p| p[0]).collect();
        assert_eq!(firsts, [8, 24, 40, 56]);
        // 2 or 3 pieces: the middle one of each stretch; fewer: the whole chunk.
        let three: Vec<u8> = (0..4 * PIECE_BYTES - 1)
            .map(|i| (i / PIECE_BYTES) as u8)
            .collect();
        assert_eq!(*pieces(&three), vec![1u8; PIECE_BYTES]);
        let small = vec![7u8; 2 * PIECE_BYTES - 1];
        assert!(matches!(pieces(&small), Cow::Borrowed(s) if s.len() == small.len()));
    }

    #[test]
    fn a_part_is_the_middle_quarter_of_a_sample_of_64_kib_or_more() {
        let data = vec![0u8; 100_000];
        let quarter = part(&data, 16).unwrap();
        assert_eq!(quarter.len(), 25_000 / 16 * 16);
        let start = quarter.as_ptr() as usize - data.as_ptr() as usize;
        assert_eq!(start, (100_000 - quarter.len()) / 2 / 16 * 16);
        assert!(part(&data[..4 * PART_LEAST_BYTES], 8).is_some());
        assert!(part(&data[..4 * PART_LEAST_BYTES - 8], 8).is_none());
    }
}
