//! What the caller tells the codec about a chunk: word size, shape, time axis, lag,
//! predictor, mode and thread count.

use crate::coder::Coder;
use crate::element_type::ElementType;
use crate::error::{Error, Result};
use crate::format::MAX_RANK;
use crate::layout::checked_product;
use crate::predict::residual::ResidualMap;
use crate::predict::Predictor;
use crate::tile::Candidates;

/// Largest thread count accepted (beyond this a request is a mistake, not a wish).
pub const MAX_THREADS: usize = 1024;

/// Compression mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Predictive packing along the time axis: fast, moderate ratio.
    Fast,
    /// Context-modelled entropy coding of the residuals, for cold storage: smaller,
    /// several times slower.
    Archive,
}

impl Mode {
    /// Every mode, in id order.
    pub const ALL: [Mode; 2] = [Mode::Fast, Mode::Archive];

    /// The mode's number in cd_values and in the chunk header.
    pub fn id(self) -> u8 {
        match self {
            Mode::Fast => 0,
            Mode::Archive => 1,
        }
    }

    /// The mode with number `id`, if there is one.
    pub fn from_id(id: u32) -> Option<Mode> {
        match id {
            0 => Some(Mode::Fast),
            1 => Some(Mode::Archive),
            _ => None,
        }
    }
}

/// What kind of numbers the words hold: decides which residual maps `auto` tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElementKind {
    /// IEEE floating point (real or complex).
    Float,
    /// Integers (or pairs of integers).
    Integer,
    /// Anything else, coded as plain words or bytes.
    Other,
}

impl ElementKind {
    /// Every kind.
    pub const ALL: [ElementKind; 3] =
        [ElementKind::Float, ElementKind::Integer, ElementKind::Other];
}

/// Predictors `auto` chooses from, per tile.
pub const AUTO_PREDICTORS: [Predictor; 4] = [
    Predictor::Lagrange(1),
    Predictor::Lagrange(2),
    Predictor::Mean(4),
    Predictor::Lorenzo,
];

/// The coder used when none is requested.
pub const DEFAULT_CODER: Coder = Coder::Patched;

/// Predictors archive mode's `auto` chooses from: all but the medians, which gained
/// little over the means in the measurements (docs/compression.md) and decode at half
/// their speed, plus none (with a spatial head: purely spatial prediction).
pub fn archive_predictors() -> Vec<Predictor> {
    (Predictor::ALL.into_iter())
        .filter(|p| !matches!(p, Predictor::Median(_)))
        .chain([Predictor::Zero])
        .collect()
}

/// The coder archive mode uses when none is requested.
pub const ARCHIVE_CODER: Coder = Coder::ContextAns;

/// Parameters of one `compress` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Bytes per word: 1, 2, 4 or 8. Elements made of several words (complex numbers)
    /// are described by a trailing shape dimension of their component count.
    pub word_size: usize,
    /// Chunk shape in words, slowest-varying dimension first. Empty means one
    /// dimension covering the whole buffer.
    pub shape: Vec<usize>,
    /// Index of the time axis in `shape`.
    pub time_axis: usize,
    /// Words between two successive samples of one series; 0 derives it as the
    /// product of the dimensions after the time axis.
    pub lag: usize,
    /// Predictor along the time axis; `None` chooses per tile (in fast mode among the
    /// previous sample, the parallelogram, the mean of 4 and Lorenzo; in archive mode
    /// among all but the medians, and no prediction).
    pub predictor: Option<Predictor>,
    /// Residual map; `None` chooses per tile among those suited to `element`.
    pub residual_map: Option<ResidualMap>,
    /// Residual coder; `None` means patched packing (fast) or context rANS (archive).
    pub coder: Option<Coder>,
    /// What the words hold.
    pub element: ElementKind,
    /// Words per element (2 for complex numbers): when above 1, the last dimension of
    /// `shape` is this component axis.
    pub components: usize,
    /// Worker threads; 0 means all cores. Never changes the output bytes.
    pub threads: usize,
    /// Compression mode.
    pub mode: Mode,
    /// What the elements are, recorded in the chunk for typed readers (decoding bytes
    /// never needs it); unknown by default.
    pub element_type: ElementType,
    /// Effort: 0 is the mode's default ([`DEFAULT_LEVEL`]); 1 (fastest) to [`MAX_LEVEL`]
    /// (smallest). Levels 1 to 3 skip the general-purpose trials; 4 to 6 try them, archive
    /// mode's heavy general-purpose coders (Zstandard 19 and bzip2) where a light one
    /// already wins; 7 and 8 also where a light one comes near; 9 codes every
    /// general-purpose coder in full on each tile (residuals and words as they are) and
    /// on the whole chunk, and keeps the smallest. Decoding never depends on it.
    pub level: u8,
}

/// The highest effort level.
pub const MAX_LEVEL: u8 = 9;

/// The effort level that level 0 (the mode's default) stands for.
pub const DEFAULT_LEVEL: u8 = 5;

/// Levels from this one on also try archive mode's heavy general-purpose coders where a
/// light one comes near the smaller chunk so far.
pub(crate) const HEAVY_LEVEL: u8 = 7;

/// Levels up to this one skip the general-purpose trials.
const LEAN_LEVELS: u8 = 3;

impl Params {
    /// Fast-mode parameters for a chunk of `shape` words of `word_size` bytes, time axis 0.
    pub fn new(word_size: usize, shape: &[usize]) -> Params {
        Params {
            word_size,
            shape: shape.to_vec(),
            time_axis: 0,
            lag: 0,
            predictor: None,
            residual_map: None,
            coder: None,
            element: ElementKind::Float,
            components: 1,
            threads: 0,
            mode: Mode::Fast,
            element_type: ElementType::default(),
            level: 0,
        }
    }

    /// The effort level in force: [`DEFAULT_LEVEL`] for level 0, else the level.
    pub(crate) fn effort_level(&self) -> u8 {
        if self.level == 0 {
            DEFAULT_LEVEL
        } else {
            self.level
        }
    }

    /// The predictor / map / coder combinations the encoder may use. Archive mode's
    /// `auto` tries [`archive_predictors`], each also with a spatially predicted first
    /// row when the chunk has an innermost element axis (`spatial_axis`).
    pub(crate) fn candidates(&self, spatial_axis: bool) -> Candidates {
        let archive = self.mode == Mode::Archive;
        let auto = match (archive, self.element) {
            (true, _) => archive_predictors(),
            // Integer samples of noise (raw correlator output) are smaller unpredicted:
            // a prediction adds the noise of the samples it is made from.
            (false, ElementKind::Integer) => {
                let mut list = AUTO_PREDICTORS.to_vec();
                list.push(Predictor::Zero);
                list
            }
            (false, _) => AUTO_PREDICTORS.to_vec(),
        };
        let predictors = self.predictor.map_or(auto, |p| vec![p]);
        // Neither a coder nor a predictor requested: the sparse tiles' trials apply.
        let unrequested = self.coder.is_none() && self.predictor.is_none();
        let heads = if archive && spatial_axis {
            vec![false, true]
        } else {
            vec![false]
        };
        let maps: Vec<ResidualMap> = match (self.residual_map, self.element) {
            (Some(map), _) => vec![map],
            // XOR never beat the subtracting maps on floats or integers in the HERA
            // measurements (docs/compression.md), so auto only tries it on other data. Rotate-subtract
            // wins on real float data, plain subtraction on some generated data.
            (None, ElementKind::Float) => vec![ResidualMap::RotateSubtract, ResidualMap::Subtract],
            (None, ElementKind::Integer) => vec![ResidualMap::Subtract],
            (None, ElementKind::Other) => vec![ResidualMap::Xor, ResidualMap::Subtract],
        };
        let coder = self.coder.unwrap_or(if archive {
            ARCHIVE_CODER
        } else {
            DEFAULT_CODER
        });
        // Low levels skip the trials of other coders; no coder requested, they apply.
        let trials = self.coder.is_none() && self.effort_level() > LEAN_LEVELS;
        Candidates {
            predictors,
            maps,
            heads,
            coder,
            greedy: archive,
            try_alternatives: archive && trials,
            generic: trials.then_some(if archive {
                Coder::ShuffledZstd
            } else {
                Coder::ShuffledLz4
            }),
            sparse: (unrequested && trials).then_some(if archive {
                Coder::BitshuffledZstd
            } else {
                Coder::BitshuffledLz4
            }),
            few_planes: archive && unrequested && trials,
            generic_on_repeats: archive,
            float_fields: archive && trials && self.element == ElementKind::Float,
            banded: archive && self.coder.is_none(),
            exhaustive: trials && self.effort_level() == MAX_LEVEL,
        }
    }

    /// Checks the parameters against a buffer of `len` bytes and returns the effective
    /// shape (never empty).
    pub(crate) fn validate(&self, len: usize) -> Result<Vec<usize>> {
        if !matches!(self.word_size, 1 | 2 | 4 | 8) {
            return Err(Error::InvalidParams(format!(
                "word size {} is not 1, 2, 4 or 8",
                self.word_size
            )));
        }
        if !len.is_multiple_of(self.word_size) {
            return Err(Error::InvalidParams(format!(
                "buffer of {len} bytes is not a whole number of {}-byte words",
                self.word_size
            )));
        }
        if self.level > MAX_LEVEL {
            return Err(Error::InvalidParams(format!(
                "level {} is not 0 (the default) or 1 (fastest) to {MAX_LEVEL} (smallest)",
                self.level
            )));
        }
        if self.threads > MAX_THREADS {
            return Err(Error::InvalidParams(format!(
                "{} threads requested, at most {MAX_THREADS} allowed",
                self.threads
            )));
        }
        if let Some(p) = self.predictor.filter(|p| !p.exists()) {
            return Err(Error::InvalidParams(format!(
                "predictor {p:?} does not exist (there are Lagrange(1 to 4), Mean(2, 4 or 8), \
                 Median(3 or 5), Holt, Lorenzo and Zero)"
            )));
        }
        let words = len / self.word_size;
        let shape = if self.shape.is_empty() {
            vec![words]
        } else {
            self.shape.clone()
        };
        if shape.len() > MAX_RANK {
            return Err(Error::InvalidParams(format!(
                "rank {} exceeds the maximum of {MAX_RANK}",
                shape.len()
            )));
        }
        let product = checked_product(&shape)?;
        if product != words {
            return Err(Error::InvalidParams(format!(
                "shape {shape:?} holds {product} words but the buffer holds {words}"
            )));
        }
        if self.components == 0 || (self.components > 1 && shape.last() != Some(&self.components)) {
            return Err(Error::InvalidParams(format!(
                "{} components per element need a last dimension of {}",
                self.components, self.components
            )));
        }
        if self.time_axis >= shape.len() {
            return Err(Error::InvalidParams(format!(
                "time axis {} is out of range for rank {}",
                self.time_axis,
                shape.len()
            )));
        }
        if let Some(why) = (self.element_type).mismatch(self.word_size, self.components) {
            return Err(Error::InvalidParams(why));
        }
        if self.element_type.scalar && words != self.components {
            return Err(Error::InvalidParams(format!(
                "a 0-d array holds one element, not {words} words"
            )));
        }
        Ok(shape)
    }
}
