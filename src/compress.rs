//! Compressing a chunk: tiling, parallel tile coding, header, checksum and the
//! verbatim fallback for incompressible data.

use std::borrow::Cow;

use crate::axis::{self, Axis};
use crate::buffers;
use crate::checksum;
use crate::error::Result;
use crate::fill::Fill;
use crate::format::{
    self, Header, FLAG_NARROWED, FLAG_PLANAR, FLAG_SCALED, FLAG_SHIFTED, FLAG_STORED,
};
use crate::generic;
use crate::layout::{self, Geometry, Spatial, Tile};
use crate::narrow;
use crate::params::{ElementKind, Mode, Params};
use crate::planar::{self, Planar};
use crate::pool::{self, map_shared};
use crate::predict::residual::ResidualMap;
use crate::scaled;
use crate::shift;
use crate::tile::{self, Candidates};

/// Compresses one chunk of `data` described by `params`.
///
/// The output is self-describing and never more than a header larger than `data`:
/// chunks that do not compress are stored verbatim. The bytes do not depend on
/// `params.threads`.
pub fn compress(data: &[u8], params: &Params) -> Result<Vec<u8>> {
    Ok(compress_parts(data, params)?.into_vec())
}

/// `tiled`, or a brief chunk of `data` where one is smaller (see [`generic::smallest`]).
fn brief_or(tiled: Packed, data: &[u8], params: &Params) -> Result<Packed> {
    let shape = params.validate(data.len())?;
    Ok(match generic::smallest(tiled.len(), data, &shape, params) {
        Some(brief) => Packed::whole(brief),
        None => tiled,
    })
}

/// The chunk as the plain coding `code` makes it, or as scaled integers when the data
/// are and that is smaller (see [`clearly_smaller`] for fast mode's shortcut and
/// [`scaled_on_part`] for archive mode's); float64 data that holds float32 values is
/// narrowed first (see [`narrow`]), and in archive mode the components of elements of
/// several words are coded as planes when that is smaller (see
/// [`Layout::planar_trial`]). `code` gets the plan and the words it codes.
/// Two codings that decide between layouts run in parallel when `params` allows threads.
fn compress_smaller(
    data: &[u8],
    params: &Params,
    code: impl Fn(Plan, &[u8]) -> Packed + Sync,
) -> Result<Packed> {
    let shape = params.validate(data.len())?;
    let narrowed = narrowed(data, params);
    let narrow_params;
    let (data, params) = match &narrowed {
        Some(words) => {
            narrow_params = Params {
                word_size: 4,
                ..params.clone()
            };
            (words.as_slice(), &narrow_params)
        }
        None => (data, params),
    };
    let narrowed = narrowed.is_some();
    let shifted = shifted(data, params);
    let (words, shift) = match &shifted {
        Some((z, words)) => (words.as_slice(), *z),
        None => (data, 0),
    };
    let layout = Layout {
        shape: &shape,
        params,
        narrowed,
        sampled: false,
    };
    // Fast mode keeps the words interleaved: planes would cost it a pass over the chunk
    // each way, and lags of one word, whose recurrence decodes serially.
    let planar = Planar::of(&shape, params).filter(|_| params.mode == Mode::Archive);
    let planes = planar
        .as_ref()
        .map(|p| planar::split(words, params.word_size, p.components));
    let plain_with = |planar: Option<&Planar>| -> Result<Packed> {
        Ok(match (planar, &planes) {
            (Some(p), Some(planes)) => code(layout.plain_plan(planes, Some(p), shift)?, planes),
            _ => code(layout.plain_plan(words, None, shift)?, words),
        })
    };
    // Chunks too small to sample are coded both ways in full (the decision is then
    // free).
    let part = planar_part(words.len(), &shape, params);
    // The bytes of `part` coded plainly, as the chunk will be, when the planar trial
    // coded it.
    let mut part_plain = None;
    let (planar, decided) = match (&planar, &part) {
        (Some(p), None) => {
            let (interleaved, split) =
                pool::join(params.threads, || plain_with(None), || plain_with(Some(p)));
            let (interleaved, split) = (interleaved?, split?);
            if clearly_smaller_as_planes(split.len(), interleaved.len()) {
                (Some(p), Some(split))
            } else {
                (None, Some(interleaved))
            }
        }
        (Some(p), Some(part)) => match layout.planar_trial(part, words, shift) {
            Some((interleaved, split)) if clearly_smaller_as_planes(split, interleaved) => {
                part_plain = Some(split);
                (Some(p), None)
            }
            Some((interleaved, _)) => {
                part_plain = Some(interleaved);
                (None, None)
            }
            None => (None, None),
        },
        _ => (None, None),
    };
    let plain = || match decided {
        Some(packed) => Ok(packed),
        None => plain_with(planar),
    };
    if params.mode == Mode::Archive {
        let judged = part
            .as_ref()
            .and_then(|part| scaled_on_part(data, words, layout, part, planar, shift, part_plain));
        match judged {
            Some(Judged::Scaled) => {
                return match compress_scaled(data, layout, planar) {
                    Some(scaled) => Ok(Packed::whole(scaled)),
                    None => plain(),
                }
            }
            Some(Judged::Plain) => return plain(),
            Some(Judged::Close) | None => {}
        }
        // Unless its part was clear, archive mode codes the chunk both ways and keeps the
        // smaller: in parallel, the plain coding on the calling thread, whose own tiles
        // the pool's workers then share (a worker's nested tiles would get no help from
        // the caller).
        let threads = params.threads;
        let (plain, scaled) = pool::join(threads, plain, || compress_scaled(data, layout, planar));
        let plain = plain?;
        return Ok(match scaled {
            Some(scaled) if scaled.len() < plain.len() => Packed::whole(scaled),
            Some(scaled) => {
                buffers::give(scaled);
                plain
            }
            None => plain,
        });
    }
    if !scaled_pays_on_sample(data, words, layout, shift) {
        return plain();
    }
    let Some(scaled) = compress_scaled(data, layout, planar) else {
        return plain();
    };
    // The shortcut assumes the floats' low mantissa bits are noise: not so when shifted.
    if shift == 0 && clearly_smaller(&scaled, data, params) {
        return Ok(Packed::whole(scaled));
    }
    let plain = plain()?;
    if scaled.len() < plain.len() {
        return Ok(Packed::whole(scaled));
    }
    buffers::give(scaled);
    Ok(plain)
}

/// Parts of a chunk's first axis of more than one element, one of which is coded both
/// ways to decide between two codings of the whole chunk.
const SAMPLE_PARTS: usize = 8;
/// Chunks below this many bytes are coded both ways whole: a part would say little.
const SAMPLE_MIN_BYTES: usize = 1 << 18;
/// Indices of `axis` that a part of a chunk of `bytes` bytes and `shape` keeps: a
/// [`SAMPLE_PARTS`]-th of them, at most [`generic::SAMPLE_MAX_BYTES`] of the chunk, at
/// least two.
fn part_extent(bytes: usize, shape: &[usize], axis: usize) -> usize {
    let slice = bytes / shape[axis];
    (shape[axis] / SAMPLE_PARTS)
        .min(generic::SAMPLE_MAX_BYTES / slice.max(1))
        .max(2)
}

/// The chunk's first [`SAMPLE_PARTS`]-th (see [`part_extent`]): whole slices of its first
/// axis of more than one element, when the chunk (of `bytes` bytes) has at least
/// [`SAMPLE_MIN_BYTES`] and that axis at least `2 * SAMPLE_PARTS` elements.
fn sample_part(bytes: usize, shape: &[usize]) -> Option<Part> {
    let axis = shape.iter().position(|&d| d > 1)?;
    if bytes < SAMPLE_MIN_BYTES || shape[axis] < 2 * SAMPLE_PARTS {
        return None;
    }
    Some(Part::first_of(shape, axis, part_extent(bytes, shape, axis)))
}

/// What every coding of a chunk shares: its (validated) shape, the parameters (4-byte
/// words when narrowed) and whether float64 words were narrowed.
#[derive(Clone, Copy)]
struct Layout<'a> {
    shape: &'a [usize],
    params: &'a Params,
    narrowed: bool,
    /// Whether this is a part of the chunk, coded to decide how to code the chunk: its
    /// tiles are then not cut into blocks (see [`element_blocks`]), whose trial on a part
    /// would judge a tiling the chunk does not have, nor coded by their float fields
    /// (see [`Plan::new`]).
    sampled: bool,
}

impl<'a> Layout<'a> {
    /// The same chunk cut to `shape` (a sample of it).
    fn cut(self, shape: &'a [usize]) -> Layout<'a> {
        Layout {
            shape,
            sampled: true,
            ..self
        }
    }

    /// The plan of the plain coding (no scale section) of `words` (shifted by `shift`
    /// bits; the planes when `planar` is given).
    fn plain_plan(self, words: &[u8], planar: Option<&Planar>, shift: u8) -> Result<Plan> {
        Ok(self.plan(words, planar, None)?.shifted(shift))
    }

    /// The plan of `words` (integers when there is a `scale_section`; the planes when
    /// `planar` is given, whose parameters are then used).
    fn plan(
        self,
        words: &[u8],
        planar: Option<&Planar>,
        scale_section: Option<Vec<u8>>,
    ) -> Result<Plan> {
        match planar {
            Some(p) => Plan::new(
                words,
                &p.params.shape,
                &p.params,
                scale_section,
                self.narrowed,
                true,
                !self.sampled,
            ),
            None => Plan::new(
                words,
                self.shape,
                self.params,
                scale_section,
                self.narrowed,
                false,
                !self.sampled,
            ),
        }
    }

    /// The bytes of `part` of the chunk's float `data` coded as scaled integers (as
    /// planes when `planar` is given), if they are (see [`compress_scaled`]).
    fn scaled_part_len(self, part: &Part, data: &[u8], planar: Option<&Planar>) -> Option<usize> {
        let head = part.gather(data, self.shape, self.params.word_size);
        let scaled = compress_scaled(&head, self.cut(&part.shape), planar)?;
        let len = scaled.len();
        buffers::give(scaled);
        Some(len)
    }

    /// The bytes of `part` of the chunk's `words` (shifted by `shift`) coded plainly with
    /// its words interleaved; None when the coding fails.
    fn plain_part_len(self, part: &Part, words: &[u8], shift: u8) -> Option<usize> {
        let head = part.gather(words, self.shape, self.params.word_size);
        let plain = self
            .cut(&part.shape)
            .plain_plan(&head, None, shift)
            .ok()?
            .compress(&head);
        let len = plain.len();
        buffers::give(plain);
        Some(len)
    }

    /// The payload bytes of `part` of the chunk (see [`planar_part`]) coded with its components
    /// interleaved and as planes, which decide whether the chunk's components are coded
    /// as planes (see [`clearly_smaller_as_planes`]); None when the part has no planes or
    /// a coding failed.
    fn planar_trial(self, part: &Part, words: &[u8], shift: u8) -> Option<(usize, usize)> {
        let sample = self.cut(&part.shape);
        let split_planar = Planar::of(&part.shape, self.params)?;
        let head = part.gather(words, self.shape, self.params.word_size);
        let planes = planar::split(&head, self.params.word_size, split_planar.components);
        let coded = |words: &[u8], planar: Option<&Planar>| {
            (sample.plain_plan(words, planar, shift)).map(|plan| plan.compress(words))
        };
        let threads = self.params.threads;
        let (interleaved, split) = pool::join(
            threads,
            || coded(&head, None),
            || coded(&planes, Some(&split_planar)),
        );
        let (Ok(interleaved), Ok(split)) = (interleaved, split) else {
            return None;
        };
        // The payloads, without the headers: the part's interleaved coding may be one
        // tile (a shorter header) where the whole chunk's is several, like its planes'.
        let sizes = (payload_len(&interleaved), payload_len(&split));
        buffers::give(interleaved);
        buffers::give(split);
        Some(sizes)
    }
}

/// Bytes of a chunk after its header.
fn payload_len(chunk: &[u8]) -> usize {
    Header::parse(chunk, u64::MAX).map_or(chunk.len(), |(_, header_len)| chunk.len() - header_len)
}

/// A part of a chunk that is coded both ways to decide between two codings of the whole
/// chunk: a [`SAMPLE_PARTS`]-th of one axis (see [`part_extent`]), every index of the
/// others.
struct Part {
    /// The part's shape: the chunk's, with `axis` cut.
    shape: Vec<usize>,
    /// The axis that is cut.
    axis: usize,
    /// The first index of `axis` that the part keeps.
    first: usize,
}

impl Part {
    /// The first `kept` indices of `axis` of a chunk of `shape`, every index of the others.
    fn first_of(shape: &[usize], axis: usize, kept: usize) -> Part {
        let mut cut = shape.to_vec();
        cut[axis] = kept;
        Part {
            shape: cut,
            axis,
            first: 0,
        }
    }

    /// The part's words, gathered from `words` of the chunk's `shape` (of `word`-byte
    /// words).
    fn gather<'w>(&self, words: &'w [u8], shape: &[usize], word: usize) -> Cow<'w, [u8]> {
        let inner = shape[self.axis + 1..].iter().product::<usize>() * word;
        let whole = shape[self.axis] * inner;
        let kept = self.first * inner..(self.first + self.shape[self.axis]) * inner;
        if shape[..self.axis].iter().all(|&d| d == 1) {
            return Cow::Borrowed(&words[kept]);
        }
        Cow::Owned(
            (words.chunks_exact(whole))
                .flat_map(|block| &block[kept.clone()])
                .copied()
                .collect(),
        )
    }
}

/// The part of a chunk of `bytes` bytes and `shape` that decides whether its components
/// are coded as planes: cut along the first axis of at least `2 * SAMPLE_PARTS` elements
/// other than the time axis and the component axis, in its middle, so that the part keeps
/// every time step of the chunk (a chunk's first eighth in time codes its first rows,
/// whose predictions differ) and none of a band's edges (which are often flagged or
/// tapered); the first eighth along the first axis of more than one element (see
/// [`sample_part`]) when there is no such axis or the lag is explicit. None when the
/// chunk is below [`SAMPLE_MIN_BYTES`] or no axis is long enough.
fn planar_part(bytes: usize, shape: &[usize], params: &Params) -> Option<Part> {
    if bytes < SAMPLE_MIN_BYTES {
        return None;
    }
    let elements = shape.len() - usize::from(params.components > 1);
    let across_time = (params.lag == 0)
        .then(|| (0..elements).find(|&a| a != params.time_axis && shape[a] >= 2 * SAMPLE_PARTS))
        .flatten();
    let Some(axis) = across_time else {
        return sample_part(bytes, shape);
    };
    let kept = part_extent(bytes, shape, axis);
    Some(Part {
        first: (shape[axis] - kept) / 2,
        ..Part::first_of(shape, axis, kept)
    })
}

/// Whether a coding as planes of `planar` bytes beats the interleaved one of
/// `interleaved` bytes by at least 1/128: below that, the interleaved words are kept,
/// as they decode faster (in archive mode, markedly so) for a size the planes barely
/// beat.
fn clearly_smaller_as_planes(planar: usize, interleaved: usize) -> bool {
    planar * 128 < interleaved * 127
}

/// What coding `part` of a chunk as scaled integers and plainly says of the whole chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    /// Scaled integers code the part clearly smaller: the chunk is coded only so.
    Scaled,
    /// The plain coding is clearly smaller: the chunk is coded only plainly.
    Plain,
    /// Neither by [`CLEARLY_PARTS`]: the chunk is coded both ways.
    Close,
}

/// One coding of a part is clearly smaller than the other when it is smaller by at
/// least one part in this many.
const CLEARLY_PARTS: usize = 16;

/// Archive mode's judgement of scaled integers on `part` of the chunk (see
/// [`planar_part`]): the part coded as scaled integers from `data` (as planes when
/// `planar` is given) and plainly from `words` (shifted by `shift`): `part_plain`, the
/// size the planar trial found for the coding the chunk takes, when it ran (always when
/// `planar` is given), else coded here with its words interleaved. None when the part
/// has no scale or its integers do not compress: the whole chunk then decides.
fn scaled_on_part(
    data: &[u8],
    words: &[u8],
    layout: Layout,
    part: &Part,
    planar: Option<&Planar>,
    shift: u8,
    part_plain: Option<usize>,
) -> Option<Judged> {
    debug_assert!(planar.is_none() || part_plain.is_some());
    let scaled_len = layout.scaled_part_len(part, data, planar)?;
    let plain_len = match part_plain {
        Some(len) => len,
        None => layout.plain_part_len(part, words, shift)?,
    };
    let clearly_below = |a: usize, b: usize| a * CLEARLY_PARTS < b * (CLEARLY_PARTS - 1);
    Some(if clearly_below(scaled_len, plain_len) {
        Judged::Scaled
    } else if clearly_below(plain_len, scaled_len) {
        Judged::Plain
    } else {
        Judged::Close
    })
}

/// Whether the chunk may be smaller as scaled integers, judged in fast mode (whose words
/// stay interleaved) on its first eighth (see [`sample_part`]; coded as scaled integers
/// from `data`, and plainly from `words`): only then is the whole chunk coded both ways.
/// Floats that are integers (correlator counts stored as floats) have a scale but code
/// as small plainly, and coding them twice would halve fast mode's speed. Small chunks
/// always try both; archive mode judges on its own part (see [`scaled_on_part`]).
fn scaled_pays_on_sample(data: &[u8], words: &[u8], layout: Layout, shift: u8) -> bool {
    let params = layout.params;
    if params.mode != Mode::Fast || params.element != ElementKind::Float {
        return true;
    }
    let Some(part) = sample_part(data.len(), layout.shape) else {
        return true;
    };
    let Some(scaled) = layout.scaled_part_len(&part, data, None) else {
        return false;
    };
    let Some(plain) = layout.plain_part_len(&part, words, shift) else {
        return true;
    };
    scaled < plain
}

/// Float words without the zero low bits every word has below its sign, and their
/// count, when there are any (see [`shift`]).
fn shifted(data: &[u8], params: &Params) -> Option<(u8, Vec<u8>)> {
    if params.element != ElementKind::Float {
        return None;
    }
    let z = shift::zero_low_bits(data, params.word_size)?;
    Some((z as u8, shift::shift_down(data, params.word_size, z)))
}

/// The float32 words of float64 float data whose every word equals a float32 value.
fn narrowed(data: &[u8], params: &Params) -> Option<Vec<u8>> {
    (params.element == ElementKind::Float && params.word_size == 8)
        .then(|| narrow::narrowed(data))
        .flatten()
}

/// Whether fast mode keeps a chunk of scaled integers without also coding the floats:
/// when it is under 3/4 of the data, which the floats' noisy low mantissa bits do not
/// approach. Archive mode judges on a part instead (see [`scaled_on_part`]).
fn clearly_smaller(scaled: &[u8], data: &[u8], params: &Params) -> bool {
    params.mode == Mode::Fast && scaled.len() * 4 < data.len() * 3
}

/// The chunk coded as scaled integers (header flag bit 1), if its floats are integers
/// times a scale per group of words (see [`scaled`]) and the integers code to fewer
/// bytes than the data; the integers as planes when `planar` says so.
fn compress_scaled(data: &[u8], layout: Layout, planar: Option<&Planar>) -> Option<Vec<u8>> {
    let params = layout.params;
    if params.element != ElementKind::Float {
        return None;
    }
    let (integers, scales) = match params.word_size {
        4 => scaled::scaled_integers::<u32>(data, layout.shape),
        8 => scaled::scaled_integers::<u64>(data, layout.shape),
        _ => None,
    }?;
    let integer_params = Params {
        element: ElementKind::Integer,
        ..params.clone()
    };
    let mut section = Vec::new();
    scales.write(&mut section);
    let layout = Layout {
        params: &integer_params,
        ..layout
    };
    let integer_planar = planar.and_then(|_| Planar::of(layout.shape, &integer_params));
    let planes = planar.map(|p| planar::split(&integers, params.word_size, p.components));
    let coded = planes.as_deref().unwrap_or(&integers);
    let plan = layout
        .plan(coded, integer_planar.as_ref(), Some(section))
        .ok()?;
    let chunk = plan.compress(coded);
    drop(planes);
    buffers::give(integers);
    // A chunk that did not compress was stored: its bytes are the integers, not the data.
    let stored = Header::parse(&chunk, u64::MAX).is_ok_and(|(header, _)| header.is_stored());
    (!stored).then_some(chunk)
}

/// Smallest chunk that one thread codes one tile after another straight into the buffer
/// that holds the chunk. Below it, tile buffers from the pool and a copy cost less than
/// a fresh buffer with room for the whole chunk (glibc maps a large fresh buffer on every call,
/// and each page faults in); above it, skipping the copy is faster.
const JOINED_MIN_BYTES: usize = 1 << 20;

/// A compressed chunk as [`compress_parts`] leaves it: the header and each tile's
/// payload in separate buffers, the chunk being their concatenation. Copy the parts
/// straight to where the chunk goes instead of concatenating them first; dropping it
/// hands its buffers back for reuse.
#[derive(Debug)]
pub struct Packed {
    parts: Vec<Vec<u8>>,
}

impl Packed {
    /// A chunk already in one buffer.
    fn whole(chunk: Vec<u8>) -> Packed {
        Packed { parts: vec![chunk] }
    }

    /// Bytes of the whole chunk.
    pub fn len(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    /// Whether the chunk is empty (never: it always has a header).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunk's parts, in order.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        self.parts.iter().map(Vec::as_slice)
    }

    /// The whole chunk in one buffer (the first part's, when it is the only one).
    pub fn into_vec(mut self) -> Vec<u8> {
        let mut parts = std::mem::take(&mut self.parts).into_iter();
        let mut out = parts.next().unwrap_or_default();
        out.reserve(parts.as_slice().iter().map(Vec::len).sum());
        for part in parts {
            out.extend_from_slice(&part);
            buffers::give(part);
        }
        out
    }
}

/// Smallest chunk whose tile payloads, coded in parallel, are each copied to a buffer of
/// their own size (see [`exact_copy`]). Below it the room of all the payloads together is
/// a few MiB, and the copy would cost more time than the memory is worth.
const EXACT_PAYLOADS_MIN_BYTES: usize = 4 << 20;

/// The bytes of `room`, a buffer with room for any payload, in a buffer of their own
/// size; `room` goes back to the pool for the next tile. A chunk's payloads then hold its
/// size in memory, not the room of each: the room's pages would stay mapped (the pool
/// keeps them, and so does the allocator for freed memory it reuses) beside the chunk.
fn exact_copy(room: Vec<u8>) -> Vec<u8> {
    let payload = room.as_slice().to_vec();
    buffers::give(room);
    payload
}

impl From<Vec<u8>> for Packed {
    /// Bytes already in one buffer (a chunk, or any other bytes handed out the same way).
    fn from(bytes: Vec<u8>) -> Packed {
        Packed::whole(bytes)
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        self.parts.drain(..).for_each(buffers::give);
    }
}

/// [`compress`], leaving the chunk in parts (see [`Packed`]).
pub fn compress_parts(data: &[u8], params: &Params) -> Result<Packed> {
    let tiled = compress_smaller(data, params, |plan, words| plan.compress_parts(words))?;
    brief_or(tiled, data, params)
}

/// What compressing a chunk needs before its tiles are coded: the header so far, the
/// tiles and the candidate codings.
struct Plan {
    header: Header,
    geometry: Geometry,
    tiles: Vec<Tile>,
    candidates: Candidates,
    spatial: Spatial,
    word_size: usize,
    threads: usize,
    /// The scale section written after the header (scaled integers), else empty.
    scale_section: Vec<u8>,
    /// Payloads of tiles already coded while planning (the trial of [`blocks_pay`]),
    /// taken instead of coding those tiles again.
    coded: Vec<(Tile, Vec<u8>)>,
}

impl Plan {
    /// The plan for `data` of (validated) `shape`; with a scale section, `data` are the
    /// integers of a chunk of scaled integers; when `narrowed`, the words are the float32
    /// words of float64 data (and `params` says 4-byte words); when `planar`, `data` are
    /// the planes of the chunk's components (see [`planar`]), `shape` and `params`
    /// those of the planes; `whole` says the data is the whole chunk, not a part coded
    /// in a trial: only then does archive mode cut tiles into blocks (see
    /// [`element_blocks`]) and try coding raw floats by their fields (coder 10), which
    /// would judge the part by a coding the trial's decision does not depend on.
    fn new(
        data: &[u8],
        shape: &[usize],
        params: &Params,
        scale_section: Option<Vec<u8>>,
        narrowed: bool,
        planar: bool,
        whole: bool,
    ) -> Result<Plan> {
        let axes = axis::element_axes(shape.len(), params.components, planar);
        let fill = (axes.clone())
            .find(|&a| shape[a] > 1)
            .and_then(|a| Fill::at_end_of(data, shape, a, params.word_size));
        let (axis, spatial) = match fill {
            // The axis that predicts the data best, not the fill: chosen on the data.
            Some(fill) if params.lag == 0 => {
                let part = Part::first_of(shape, fill.axis, fill.data);
                let words = part.gather(data, shape, params.word_size);
                choose_axis(&words, &part.shape, params, planar)
            }
            _ => choose_axis(data, shape, params, planar),
        };
        let mut geometry = Geometry::from_shape(shape, axis.time_axis, axis.lag)?;
        if params.mode == Mode::Fast {
            geometry = geometry.retiled(layout::fast_tile_target(geometry.words(), geometry.lag));
        }
        if planar {
            // The coded array's first axis is the component: tiles keep to one.
            geometry = geometry.tiles_within_groups(geometry.planes / shape[0].max(1));
        }
        if let Some(fill) = fill.filter(|f| f.axis == axis.time_axis) {
            // Each plane's rows from the first that holds only fill, in tiles of their own.
            let slab: usize = shape[fill.axis + 1..].iter().product();
            geometry = geometry.rows_apart((fill.data * slab).div_ceil(geometry.lag));
        }
        let mut candidates = params.candidates(spatial.stride > 0);
        candidates.float_fields &= whole;
        let mut coded = Vec::new();
        if whole && params.mode == Mode::Archive {
            let blocks_of =
                |g: &Geometry| element_blocks(shape, axis.time_axis, params.components, g);
            // Two tiles, unless that stops the blocks from applying.
            let two = geometry.in_two_tiles();
            let (blocks_two, blocks_one) = (blocks_of(&two), blocks_of(&geometry));
            let blocks = if blocks_two.is_some() || blocks_one.is_none() {
                geometry = two;
                blocks_two
            } else {
                blocks_one
            };
            if let Some(split) = blocks.map(|width| geometry.with_tile_cols(width)) {
                let word = params.word_size;
                let threads = params.threads;
                let trial =
                    blocks_pay(data, &geometry, &split, &candidates, spatial, word, threads);
                if trial.blocks_pay {
                    geometry = split;
                }
                coded = trial.kept;
            }
        }
        let header = Header {
            version: format::VERSION,
            element: params.element_type,
            mode: params.mode.id(),
            flags: if scale_section.is_some() {
                FLAG_SCALED
            } else {
                0
            } | if narrowed { FLAG_NARROWED } else { 0 }
                | if planar { FLAG_PLANAR } else { 0 },
            predictor: params.predictor.map_or(0, |p| p.id()),
            residual_map: params.residual_map.map_or(0, |m| m.id()),
            coder: candidates.coder.id(),
            word_size: if narrowed { 8 } else { params.word_size as u8 },
            time_axis: axis.time_axis as u8,
            shift: 0,
            decoded_size: data.len() as u64 * if narrowed { 2 } else { 1 },
            lag: geometry.lag as u64,
            tiling: geometry.tiling,
            spatial,
            checksum: 0,
            layout_digest: 0,
            shape: shape.iter().map(|&d| d as u64).collect(),
            tile_sizes: Vec::new(),
            pipeline: 0,
        };
        Ok(Plan {
            header,
            tiles: geometry.tiles(),
            geometry,
            candidates,
            spatial,
            word_size: params.word_size,
            threads: params.threads,
            scale_section: scale_section.unwrap_or_default(),
            coded,
        })
    }

    /// The plan for words without `z` zero low bits (none when `z` is 0).
    fn shifted(mut self, z: u8) -> Plan {
        if z > 0 {
            self.header.flags |= FLAG_SHIFTED;
            self.header.shift = z;
        }
        self
    }

    /// The whole chunk in one buffer.
    fn compress(self, data: &[u8]) -> Vec<u8> {
        self.compress_parts(data).into_vec()
    }

    /// Bytes of the header and the scale section.
    fn head_len(&self) -> usize {
        self.header.encoded_len() + self.scale_section.len()
    }

    /// Writes the header and the scale section to `out`.
    fn write_head(&self, out: &mut Vec<u8>) {
        self.header.write(out);
        out.extend_from_slice(&self.scale_section);
    }

    /// The chunk in parts: coded straight into one buffer when one thread codes a large
    /// chunk (see [`Plan::compress_joined`]), else the tiles in parallel, each payload
    /// of a large chunk in a buffer of its own size.
    fn compress_parts(mut self, data: &[u8]) -> Packed {
        if data.len() >= JOINED_MIN_BYTES && !pool::runs_in_parallel(self.threads, self.tiles.len())
        {
            return Packed::whole(self.compress_joined(data));
        }
        let (payloads, digests): (Vec<Vec<u8>>, Vec<u64>) =
            map_shared(self.threads, self.tiles.iter().collect(), |tile| {
                let mut room = buffers::take(self.max_payload_len(tile));
                self.encode_tile_into(data, tile, &mut room);
                let payload = if data.len() >= EXACT_PAYLOADS_MIN_BYTES {
                    exact_copy(room)
                } else {
                    room
                };
                (payload, self.digest(data, tile))
            })
            .into_iter()
            .unzip();
        let sizes: Vec<usize> = payloads.iter().map(Vec::len).collect();
        if !self.finish_header(data, &sizes, &digests) {
            payloads.into_iter().for_each(buffers::give);
            return Packed {
                parts: vec![self.stored(data)],
            };
        }
        let mut head = Vec::with_capacity(self.head_len());
        self.write_head(&mut head);
        let mut parts = Vec::with_capacity(1 + payloads.len());
        parts.push(head);
        parts.extend(payloads);
        Packed { parts }
    }

    /// The tiles coded one after another straight into the chunk's buffer, after room
    /// for the header (written last, when the tile sizes are known): no copy of the
    /// payloads.
    fn compress_joined(mut self, data: &[u8]) -> Vec<u8> {
        // The header's length depends on the tile count only.
        self.header.tile_sizes = vec![0; self.tiles.len()];
        let header_len = self.head_len();
        let room: usize = self.tiles.iter().map(|t| self.max_payload_len(t)).sum();
        let mut out = buffers::take(header_len + room);
        out.resize(header_len, 0);
        let mut sizes = Vec::with_capacity(self.tiles.len());
        let mut digests = Vec::with_capacity(self.tiles.len());
        for tile in &self.tiles {
            let start = out.len();
            self.encode_tile_into(data, tile, &mut out);
            sizes.push(out.len() - start);
            digests.push(self.digest(data, tile));
        }
        if !self.finish_header(data, &sizes, &digests) {
            buffers::give(out);
            return self.stored(data);
        }
        let mut head = Vec::with_capacity(header_len);
        self.write_head(&mut head);
        out[..header_len].copy_from_slice(&head);
        out
    }

    /// Appends `tile`'s payload to `out`.
    fn encode_tile_into(&self, data: &[u8], tile: &Tile, out: &mut Vec<u8>) {
        if let Some((_, payload)) = self.coded.iter().find(|(t, _)| t == tile) {
            out.extend_from_slice(payload);
            return;
        }
        let (g, c, s) = (&self.geometry, &self.candidates, self.spatial);
        encode_tile(self.word_size, data, g, tile, c, s, out);
    }

    /// Room for `tile`'s payload whatever the coder.
    fn max_payload_len(&self, tile: &Tile) -> usize {
        let words = self.geometry.tile_words(tile);
        match self.word_size {
            1 => tile::max_payload_len::<u8>(words),
            2 => tile::max_payload_len::<u16>(words),
            4 => tile::max_payload_len::<u32>(words),
            _ => tile::max_payload_len::<u64>(words),
        }
    }

    /// `tile`'s digest (see [`checksum::tile_digest`]).
    fn digest(&self, data: &[u8], tile: &Tile) -> u64 {
        checksum::tile_digest(data, &self.geometry, tile, self.word_size)
    }

    /// Completes the header for tiles of `sizes` bytes and `digests`; false when the
    /// chunk is to be stored instead (the payloads are no smaller than the data, or a
    /// tile's size does not fit the table).
    fn finish_header(&mut self, data: &[u8], sizes: &[usize], digests: &[u64]) -> bool {
        let payload_len: usize = sizes.iter().sum::<usize>() + self.scale_section.len();
        let fits_table = sizes.iter().all(|&size| u32::try_from(size).is_ok());
        if payload_len >= data.len() || !fits_table {
            return false;
        }
        self.header.checksum = checksum::combine_digests(digests);
        self.header.tile_sizes = sizes.iter().map(|&size| size as u32).collect();
        true
    }

    /// The chunk stored verbatim after its header (planes joined and shifted words
    /// shifted back first).
    fn stored(mut self, data: &[u8]) -> Vec<u8> {
        if self.header.is_planar() {
            // The planes joined back: the decoded array, its components last.
            let mut words = vec![0u8; data.len()];
            let components = self.header.shape[0] as usize;
            planar::join_into(data, self.word_size, components, &mut words);
            self.header.shape.rotate_left(1);
            self.header.time_axis -= 1;
            self.header.flags &= !FLAG_PLANAR;
            return self.stored(&words);
        }
        if self.header.is_shifted() {
            let mut words = data.to_vec();
            shift::shift_up(&mut words, self.word_size, u32::from(self.header.shift));
            self.header.flags &= !FLAG_SHIFTED;
            self.header.shift = 0;
            return self.stored(&words);
        }
        self.header.flags = FLAG_STORED | (self.header.flags & FLAG_NARROWED);
        self.scale_section.clear();
        self.header.checksum = checksum::data_checksum(data);
        self.header.tile_sizes = Vec::new();
        let mut out = buffers::take(self.header.encoded_len() + data.len());
        self.header.write(&mut out);
        out.extend_from_slice(data);
        out
    }
}

/// Appends the payload of `tile` of chunk `data` (of `word`-byte words, `g`) to `out`.
fn encode_tile(
    word: usize,
    data: &[u8],
    g: &Geometry,
    tile: &Tile,
    candidates: &Candidates,
    spatial: Spatial,
    out: &mut Vec<u8>,
) {
    let (c, s) = (candidates, spatial);
    match word {
        1 => tile::encode_tile_into::<u8>(data, g, tile, c, s, out),
        2 => tile::encode_tile_into::<u16>(data, g, tile, c, s, out),
        4 => tile::encode_tile_into::<u32>(data, g, tile, c, s, out),
        _ => tile::encode_tile_into::<u64>(data, g, tile, c, s, out),
    }
}

/// Most blocks of one element axis index that a tile's columns are cut into.
const MOST_BLOCKS: usize = 8;
/// Fewest words in a block of one element axis index, the tile's rows of it.
const BLOCK_MIN_WORDS: usize = 1 << 13;

/// Columns of one index of the outermost element axis after the time axis that cuts
/// each tile of `g` (a chunk of `shape`, series along `time_axis`, elements of
/// `components` words) into 2 to [`MOST_BLOCKS`] blocks of at least [`BLOCK_MIN_WORDS`]
/// words: a tile of a few baselines, say, whose statistics differ (autocorrelations and
/// cross-correlations), is then coded as a tile per baseline. None when the rows are not
/// the time steps of the whole array (a requested lag) or no axis does so.
fn element_blocks(
    shape: &[usize],
    time_axis: usize,
    components: usize,
    g: &Geometry,
) -> Option<usize> {
    let element_end = shape.len() - usize::from(components > 1);
    if g.lag != shape[time_axis + 1..].iter().product::<usize>() {
        return None;
    }
    let cols = g.tiling.tile_cols.min(g.lag);
    let rows = g.tiling.tile_rows.min(g.rows());
    (time_axis + 1..element_end)
        .filter(|&a| shape[a] > 1)
        .map(|a| shape[a + 1..].iter().product::<usize>())
        .find(|&width| {
            width > 0
                && cols.is_multiple_of(width)
                && (2..=MOST_BLOCKS).contains(&(cols / width))
                && width * rows >= BLOCK_MIN_WORDS
        })
}

/// What [`blocks_pay`] found: whether the blocks pay, and the payloads of the tiles it
/// coded in the tiling it chose.
struct BlocksTrial {
    blocks_pay: bool,
    kept: Vec<(Tile, Vec<u8>)>,
}

/// Whether the tiling `split` (tiles cut into column blocks) codes the middle tile of
/// `whole` at least 1/128 smaller than `whole` does, its blocks each coded on its own;
/// with the payloads of the tiling that wins, which the chunk's coding then takes. The
/// tile and its blocks are coded on `threads` threads.
fn blocks_pay(
    data: &[u8],
    whole: &Geometry,
    split: &Geometry,
    candidates: &Candidates,
    spatial: Spatial,
    word: usize,
    threads: usize,
) -> BlocksTrial {
    let tiles = whole.tiles();
    let Some(&middle) = tiles.get(tiles.len() / 2) else {
        return BlocksTrial {
            blocks_pay: false,
            kept: Vec::new(),
        };
    };
    let code = |g: &Geometry, tile: Tile| {
        let mut out = Vec::with_capacity(g.tile_words(&tile) * word * 2);
        encode_tile(word, data, g, &tile, candidates, spatial, &mut out);
        (tile, out)
    };
    let blocks = (split.tiles().into_iter()).filter(|t| {
        (middle.plane0..middle.plane1).contains(&t.plane0)
            && (middle.row0..middle.row1).contains(&t.row0)
            && (middle.col0..middle.col1).contains(&t.col0)
    });
    // The tile whole and its blocks, coded in parallel.
    let jobs: Vec<(&Geometry, Tile)> = std::iter::once((whole, middle))
        .chain(blocks.map(|block| (split, block)))
        .collect();
    let mut coded = map_shared(threads, jobs, |(g, tile)| code(g, tile)).into_iter();
    let Some(one) = coded.next() else {
        return BlocksTrial {
            blocks_pay: false,
            kept: Vec::new(),
        };
    };
    let blocks: Vec<(Tile, Vec<u8>)> = coded.collect();
    let blocks_len: usize = blocks.iter().map(|(_, p)| p.len()).sum();
    if blocks_len * 128 < one.1.len() * 127 {
        BlocksTrial {
            blocks_pay: true,
            kept: blocks,
        }
    } else {
        BlocksTrial {
            blocks_pay: false,
            kept: vec![one],
        }
    }
}

/// The axis the chunk's series run along and its spatial neighbour: the caller's time
/// axis and lag and the innermost element axis, unless a sample shows others predict
/// clearly better (see [`axis::choose`]).
fn choose_axis(data: &[u8], shape: &[usize], params: &Params, planar: bool) -> (Axis, Spatial) {
    let hint = Axis {
        time_axis: params.time_axis,
        lag: params.lag,
    };
    let map = default_map(params);
    let axes = axis::element_axes(shape.len(), params.components, planar);
    let c = params.components;
    // Archive mode's search tries each predictor with a spatially predicted first row.
    let spatial = params.mode == Mode::Archive;
    match params.word_size {
        1 => axis::choose::<u8>(data, shape, axes, hint, c, map, spatial),
        2 => axis::choose::<u16>(data, shape, axes, hint, c, map, spatial),
        4 => axis::choose::<u32>(data, shape, axes, hint, c, map, spatial),
        _ => axis::choose::<u64>(data, shape, axes, hint, c, map, spatial),
    }
}

/// The residual map the axis estimates use: the requested one, else the element kind's.
fn default_map(params: &Params) -> ResidualMap {
    params.residual_map.unwrap_or(match params.element {
        ElementKind::Float => ResidualMap::RotateSubtract,
        ElementKind::Integer => ResidualMap::Subtract,
        ElementKind::Other => ResidualMap::Xor,
    })
}

/// Hands a buffer [`compress`] returned back for reuse by later calls, once its bytes
/// have been copied elsewhere (optional: dropping it is fine too, but reusing it keeps
/// its memory from going back to the system and faulting in again for the next chunk).
pub fn recycle(buffer: Vec<u8>) {
    buffers::give(buffer);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of a whole chunk of `shape`, not narrowed.
    fn whole<'a>(shape: &'a [usize], params: &'a Params) -> Layout<'a> {
        Layout {
            shape,
            params,
            narrowed: false,
            sampled: false,
        }
    }

    /// A part is an eighth of its axis, at most 4 MiB of the chunk, at least two slices of
    /// the axis.
    #[test]
    fn parts_are_an_eighth_of_their_axis_up_to_a_bound() {
        let mib = 1 << 20;
        // 8 MiB: an eighth (1 MiB) is under the bound.
        assert_eq!(part_extent(8 * mib, &[64, 32768], 0), 8);
        // 256 MiB of rows of 64 KiB: 64 rows (4 MiB), not 512.
        assert_eq!(part_extent(256 * mib, &[4096, 16384], 0), 64);
        assert_eq!(part_extent(256 * mib, &[4096, 16384], 1), 256);
        // Slices of 16 MiB: two of them, over the bound.
        assert_eq!(part_extent(256 * mib, &[16, 4 * mib], 0), 2);
        let part = sample_part(256 * mib, &[4096, 16384]).unwrap();
        assert_eq!((part.shape, part.axis, part.first), (vec![64, 16384], 0, 0));
    }

    /// A large chunk in parts holds its own size in memory: each part's buffer is no larger
    /// than its bytes (not the room any payload could need), whether the tiles were
    /// coded in parallel (many parts) or into one buffer (then it is the only part,
    /// with room for the largest chunk: it is not copied).
    #[test]
    fn the_parts_of_a_chunk_hold_their_own_size() {
        let shape = [64usize, 32768];
        let data: Vec<u8> = (0..shape[0] * shape[1])
            .flat_map(|i| ((i % 32768) as f32 * 1e-3).sin().to_le_bytes())
            .collect();
        for mode in [Mode::Fast, Mode::Archive] {
            let params = Params {
                mode,
                threads: 2,
                ..Params::new(4, &shape)
            };
            let packed = compress_parts(&data, &params).unwrap();
            let parallel = pool::runs_in_parallel(2, 16);
            assert_eq!(
                packed.parts.len(),
                if parallel { 17 } else { 1 },
                "{mode:?}"
            );
            if parallel {
                for part in &packed.parts {
                    assert_eq!(part.capacity(), part.len(), "{mode:?}");
                }
            }
            assert!(packed.len() < data.len() / 2, "{mode:?}: {}", packed.len());
        }
    }

    #[test]
    fn a_planar_chunk_stored_holds_the_words_in_their_own_order() {
        let shape = [4usize, 3, 2];
        let data: Vec<u8> = (0..96u8).collect();
        let mut params = Params::new(4, &shape);
        params.components = 2;
        params.mode = Mode::Archive;
        let layout = whole(&shape, &params);
        let planar = Planar::of(&shape, &params).unwrap();
        let planes = planar::split(&data, 4, 2);
        let plan = layout.plain_plan(&planes, Some(&planar), 0).unwrap();
        assert_eq!(plan.header.flags, FLAG_PLANAR);
        assert_eq!(plan.header.shape, vec![2, 4, 3]);
        let chunk = plan.stored(&planes);
        let (header, len) = Header::parse(&chunk, u64::MAX).unwrap();
        assert_eq!(header.flags, FLAG_STORED);
        assert_eq!(header.shape, vec![4, 3, 2]);
        assert_eq!(&chunk[len..], &data[..]);
        assert_eq!(crate::decompress(&chunk).unwrap(), data);
    }

    /// Float32 spectra of 16-bit integers times one scale per spectrum: (time, baseline,
    /// channel).
    fn scaled_spectra(shape: [usize; 3]) -> Vec<u8> {
        let [times, baselines, channels] = shape;
        let mut out = Vec::new();
        for t in 0..times {
            for b in 0..baselines {
                let scale = 1.0e-3 * (1.0 + ((t * 31 + b * 17) % 97) as f32 / 97.0);
                for c in 0..channels {
                    let level = ((c as f32 / channels as f32) * 6.0).sin() * 12_000.0;
                    let q = (level + ((t * 131 + b * 71 + c * 29) % 401) as f32 - 200.0) as i16;
                    out.extend_from_slice(&(f32::from(q) * scale).to_le_bytes());
                }
            }
        }
        out
    }

    /// What archive mode's judgement on a part says of float32 `data` of `shape`.
    fn judged(data: &[u8], shape: &[usize]) -> Option<Judged> {
        let mut params = Params::new(4, shape);
        params.mode = Mode::Archive;
        let layout = whole(shape, &params);
        let shifted = shifted(data, &params);
        let (words, shift) = match &shifted {
            Some((z, words)) => (words.as_slice(), *z),
            None => (data, 0),
        };
        let part = planar_part(data.len(), shape, &params).expect("a part");
        scaled_on_part(data, words, layout, &part, None, shift, None)
    }

    #[test]
    fn archive_mode_codes_spectra_clearly_smaller_as_integers_only_so() {
        let shape = [64, 8, 256];
        let data = scaled_spectra(shape);
        assert_eq!(judged(&data, &shape), Some(Judged::Scaled));
        let mut params = Params::new(4, &shape);
        params.mode = Mode::Archive;
        let layout = whole(&shape, &params);
        let scaled = compress_scaled(&data, layout, None).expect("a scale");
        assert_eq!(compress(&data, &params).unwrap(), scaled);
    }

    #[test]
    fn archive_mode_codes_floats_of_few_mantissa_bits_plainly_only() {
        // Series through zero rounded to 8 mantissa bits, as lossy pre-filters leave
        // them: a scale divides them, but their integers span the magnitudes' range,
        // which the floats' exponents code in a few bits.
        let shape = [32, 16, 256];
        let data: Vec<u8> = (0..shape.iter().product::<usize>())
            .flat_map(|k| {
                let k = k as f32;
                let x = 1.0e3 * (k * 1.0e-3).sin() * (1.5 + (k * 0.37).sin());
                (f32::from_bits(x.to_bits() & !0x7fff)).to_le_bytes()
            })
            .collect();
        assert_eq!(judged(&data, &shape), Some(Judged::Plain));
        let mut params = Params::new(4, &shape);
        params.mode = Mode::Archive;
        let chunk = compress(&data, &params).unwrap();
        let (header, _) = Header::parse(&chunk, u64::MAX).unwrap();
        assert!(!header.is_scaled());
        assert_eq!(crate::decompress(&chunk).unwrap(), data);
    }

    #[test]
    fn archive_mode_judges_no_part_of_floats_without_a_scale() {
        let shape = [32, 16, 256];
        let data: Vec<u8> = (0..shape.iter().product::<usize>())
            .flat_map(|k| (1.0e3 * (k as f32 * 1.0e-3).sin()).to_le_bytes())
            .collect();
        assert_eq!(judged(&data, &shape), None);
    }
}
