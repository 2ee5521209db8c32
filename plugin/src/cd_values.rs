//! The cd_values contract: what the user sets, what `set_local` appends, and how a full
//! array becomes codec parameters. Pure Rust, no HDF5 calls, so it is unit-tested and
//! fuzzed on its own.
//!
//! The contract itself (every index, field and value) is defined once, in the options
//! table of docs/options.md; this module implements it.
//!
//! A dataset is created with at most the five user values, or with a complete array
//! `set_local` wrote for another dataset (a copied property list: h5repack, `H5Pcopy`),
//! whose user part is kept and whose rest is derived again; anything else is refused
//! (see [`creation_options`]).

use karoo::{
    Coder, ElementKind, ElementType, Mode, Params, Predictor, ResidualMap, MAX_LEVEL, MAX_THREADS,
};

/// Predictor id that asks for per-tile automatic choice (as does 0).
pub const PREDICTOR_AUTO: u32 = 12;

/// Number of user-settable cd_values.
pub const USER_VALUES: usize = 5;
/// Version of the layout `set_local` writes at index 5.
pub const LAYOUT_VERSION: u32 = 2;
/// The first layout version (no element type, no exact-size flag), still read.
pub const LAYOUT_VERSION_1: u32 = 1;
/// Values before the chunk dimensions in a layout of version 1.
const FIXED_VALUES_V1: usize = 11;
/// Values before the chunk dimensions in a layout of version 2.
const FIXED_VALUES: usize = 12;
/// Bit of the layout's `cd_values[10]` (version 2) set when karoo codes the dataset's
/// chunks as HDF5 hands them over (no filter before it changes their size): a chunk
/// must then decode to exactly the chunk's bytes.
const EXACT_SIZE: u32 = 1 << 8;
/// Largest chunk rank HDF5 allows.
pub const MAX_CHUNK_RANK: usize = 32;

/// The user's choices (cd_values 0 to 4), validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserOptions {
    /// Compression mode.
    pub mode: Mode,
    /// Effort level (0: the mode's default, 1 fastest to 9 smallest).
    pub level: u8,
    /// Predictor (`None`: auto).
    pub predictor: Option<Predictor>,
    /// Residual map (`None`: auto).
    pub residual_map: Option<ResidualMap>,
    /// Residual coder (`None`: default).
    pub coder: Option<Coder>,
    /// Worker threads (0 = all cores).
    pub threads: usize,
    /// Time axis of the dataset.
    pub time_axis: usize,
    /// Lag in elements (0 = derived).
    pub lag: usize,
    /// The raw values, as given (missing ones zero).
    pub raw: [u32; USER_VALUES],
}

/// How the dataset's elements are split into words, as `set_local` found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementLayout {
    /// Element size in bytes.
    pub element_size: u32,
    /// Element class code (0 other, 1 integer, 2 float).
    pub class: u32,
    /// Word size coded.
    pub word_size: u32,
    /// Words per element.
    pub components: u32,
    /// The element type recorded in each chunk (unknown for a layout of version 1).
    pub element_type: ElementType,
}

/// A complete filter configuration, as stored in the dataset's filter pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterConfig {
    /// The user's choices.
    pub user: UserOptions,
    /// Element layout.
    pub element: ElementLayout,
    /// Chunk dimensions in elements.
    pub chunk: Vec<u64>,
    /// No filter before karoo changes a chunk's size, so a chunk decodes to exactly
    /// [`FilterConfig::chunk_bytes`] (false for a layout of version 1).
    pub exact_size: bool,
}

impl UserOptions {
    /// Parses the user part of `values` (missing entries are 0 = default).
    pub fn parse(values: &[u32]) -> Result<UserOptions, String> {
        let mut raw = [0u32; USER_VALUES];
        for (dst, &src) in raw.iter_mut().zip(values) {
            *dst = src;
        }
        let mode = match raw[0] & 0xff {
            0 => Mode::Fast,
            1 => Mode::Archive,
            m => {
                return Err(format!(
                    "unknown mode {m} in cd_values[0] (0 = fast, 1 = archive)"
                ))
            }
        };
        let level = raw[0] >> 8;
        if level > u32::from(MAX_LEVEL) {
            return Err(format!(
                "unknown level {level} in cd_values[0] (mode + 256 * level: 0 = the mode's \
                 default, 1 fastest to {MAX_LEVEL} smallest)"
            ));
        }
        let coding = raw[1];
        let field = |shift: u32| (coding >> shift) & 0xff;
        if coding >> 24 != 0 {
            return Err(format!(
                "unknown bits {coding:#x} in cd_values[1] (predictor | map << 8 | coder << 16)"
            ));
        }
        let predictor = match field(0) {
            0 | PREDICTOR_AUTO => None,
            id => Some(
                Predictor::from_id(id)
                    .ok_or_else(|| format!("unknown predictor {id} in cd_values[1] (0 to 13)"))?,
            ),
        };
        let residual_map = match field(8) {
            0 => None,
            id => Some(
                ResidualMap::from_id(id)
                    .ok_or_else(|| format!("unknown residual map {id} in cd_values[1] (0 to 3)"))?,
            ),
        };
        let coder = match field(16) {
            0 => None,
            id => Some(Coder::from_id(id).ok_or_else(|| {
                format!(
                    "unknown residual coder {id} in cd_values[1] (0 to {})",
                    Coder::ALL.len()
                )
            })?),
        };
        let threads = raw[2] as usize;
        if threads > MAX_THREADS {
            return Err(format!(
                "{threads} threads in cd_values[2]; at most {MAX_THREADS} allowed (0 = all cores)"
            ));
        }
        Ok(UserOptions {
            mode,
            level: level as u8,
            predictor,
            residual_map,
            coder,
            threads,
            time_axis: raw[3] as usize,
            lag: raw[4] as usize,
            raw,
        })
    }

    /// Checks the time axis and lag against a chunk of `dims` elements.
    pub fn check_chunk(&self, dims: &[u64]) -> Result<(), String> {
        if self.time_axis >= dims.len() {
            return Err(format!(
                "time axis {} in cd_values[3] is out of range for a rank-{} dataset",
                self.time_axis,
                dims.len()
            ));
        }
        let plane: u64 = dims[self.time_axis..].iter().product();
        if self.lag as u64 > plane {
            return Err(format!(
                "lag {} in cd_values[4] exceeds the {plane} elements of one chunk along the time axis",
                self.lag
            ));
        }
        Ok(())
    }
}

/// The user's options in the cd_values a dataset is being created with: at most
/// [`USER_VALUES`] values, or a complete array `set_local` wrote (for the dataset whose
/// property list was copied; its layout part is derived again for the new one).
/// Anything longer is refused: `set_local` would overwrite the extra values.
pub fn creation_options(values: &[u32]) -> Result<UserOptions, String> {
    let user = UserOptions::parse(values)?;
    if values.len() > USER_VALUES {
        if let Err(why) = FilterConfig::from_values(values) {
            let layout = if values.len() >= FIXED_VALUES_V1 {
                format!(" and they are not a layout karoo wrote ({why})")
            } else {
                String::new()
            };
            return Err(format!(
                "{} cd_values given{layout}; users set at most the first {USER_VALUES} (mode, \
                 coding, threads, time axis, lag), karoo appends the others itself",
                values.len()
            ));
        }
    }
    Ok(user)
}

impl FilterConfig {
    /// The full cd_values array `set_local` stores.
    pub fn to_values(&self) -> Vec<u32> {
        let e = &self.element;
        let mut v = self.user.raw.to_vec();
        v.extend_from_slice(&[
            LAYOUT_VERSION,
            e.element_size,
            e.class,
            e.word_size,
            e.components,
            u32::from(e.element_type.to_byte()) | if self.exact_size { EXACT_SIZE } else { 0 },
            self.chunk.len() as u32,
        ]);
        v.extend(self.chunk.iter().map(|&d| d as u32));
        v
    }

    /// Parses a full cd_values array as stored by `set_local`.
    pub fn from_values(values: &[u32]) -> Result<FilterConfig, String> {
        let user = UserOptions::parse(values)?;
        let too_few = |fixed: usize| {
            format!(
                "{} cd_values, expected at least {fixed} (was set_local skipped?)",
                values.len()
            )
        };
        if values.len() < FIXED_VALUES_V1 {
            return Err(too_few(FIXED_VALUES_V1));
        }
        let fixed = match values[5] {
            LAYOUT_VERSION_1 => FIXED_VALUES_V1,
            LAYOUT_VERSION => FIXED_VALUES,
            v => return Err(format!("unknown cd_values layout version {v}")),
        };
        if values.len() < fixed {
            return Err(too_few(fixed));
        }
        // Layout version 2's element type and size rule; none in version 1.
        let extras = if fixed == FIXED_VALUES { values[10] } else { 0 };
        if extras & !(EXACT_SIZE | 0xff) != 0 {
            return Err(format!("unknown bits {extras:#x} in cd_values[10]"));
        }
        let element_type = ElementType::from_byte(extras as u8)
            .ok_or_else(|| format!("unknown element type {:#x} in cd_values[10]", extras & 0xff))?;
        let element = ElementLayout {
            element_size: values[6],
            class: values[7],
            word_size: values[8],
            components: values[9],
            element_type,
        };
        if !matches!(element.word_size, 1 | 2 | 4 | 8)
            || element.components == 0
            || element.word_size.checked_mul(element.components) != Some(element.element_size)
        {
            return Err(format!(
                "inconsistent element layout in cd_values[6..10]: {} bytes as {} words of {} bytes",
                element.element_size, element.components, element.word_size
            ));
        }
        if let Some(why) =
            (element.element_type).mismatch(element.word_size as usize, element.components as usize)
        {
            return Err(format!("cd_values[10]: {why}"));
        }
        let rank = values[fixed - 1] as usize;
        if rank == 0 || rank > MAX_CHUNK_RANK || values.len() != fixed + rank {
            return Err(format!(
                "chunk rank {rank} does not match the {} cd_values",
                values.len()
            ));
        }
        let chunk: Vec<u64> = values[fixed..].iter().map(|&d| u64::from(d)).collect();
        user.check_chunk(&chunk)?;
        Ok(FilterConfig {
            user,
            element,
            chunk,
            exact_size: extras & EXACT_SIZE != 0,
        })
    }

    /// Bytes in one full chunk, or `None` if it overflows.
    pub fn chunk_bytes(&self) -> Option<u64> {
        self.chunk
            .iter()
            .try_fold(u64::from(self.element.element_size), |acc, &d| {
                acc.checked_mul(d)
            })
    }

    /// Largest decoded size to accept when decoding a chunk of this dataset: the chunk
    /// size when karoo codes the chunks as HDF5 hands them over; else the chunk size plus
    /// what a filter earlier in the pipeline may add (Fletcher-32 adds 4 bytes, deflate of
    /// incompressible data a few per mille).
    pub fn decode_limit(&self) -> u64 {
        self.chunk_bytes().map_or(u64::MAX, |bytes| {
            if self.exact_size {
                bytes
            } else {
                bytes.saturating_add(bytes / 16).saturating_add(1 << 16)
            }
        })
    }

    /// Refuses a chunk that decodes to `decoded` bytes where the dataset's chunks hold
    /// another number (only known when karoo codes the chunks as HDF5 hands them over).
    pub fn check_decoded_len(&self, decoded: usize) -> Result<(), String> {
        match self.chunk_bytes() {
            Some(bytes) if self.exact_size && bytes != decoded as u64 => Err(format!(
                "corrupt chunk: it decodes to {decoded} bytes, the dataset's chunks hold {bytes}"
            )),
            _ => Ok(()),
        }
    }

    /// Codec parameters for a chunk buffer of `nbytes` bytes. A buffer of unexpected size
    /// (another filter before karoo changed it) is coded as a flat series of words.
    pub fn params(&self, nbytes: usize) -> Params {
        let e = &self.element;
        let word = e.word_size as usize;
        let mut params = Params {
            threads: self.user.threads,
            predictor: self.user.predictor,
            residual_map: self.user.residual_map,
            coder: self.user.coder,
            element: match e.class {
                1 => ElementKind::Integer,
                2 => ElementKind::Float,
                _ => ElementKind::Other,
            },
            mode: self.user.mode,
            level: self.user.level,
            ..Params::new(word, &[])
        };
        if self.chunk_bytes() == Some(nbytes as u64) {
            params.element_type = e.element_type;
            params.shape = self.chunk.iter().map(|&d| d as usize).collect();
            params.shape.push(e.components as usize);
            params.time_axis = self.user.time_axis;
            params.lag = self.user.lag * e.components as usize;
            params.components = e.components as usize;
        } else if !nbytes.is_multiple_of(word) {
            params.word_size = 1;
        }
        params
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use karoo::TypeKind;

    fn complex64_config() -> FilterConfig {
        FilterConfig {
            user: UserOptions::parse(&[0, 0, 2, 1, 3]).unwrap(),
            element: ElementLayout {
                element_size: 8,
                class: 2,
                word_size: 4,
                components: 2,
                element_type: ElementType::of(TypeKind::Complex),
            },
            chunk: vec![4, 10, 5],
            exact_size: true,
        }
    }

    #[test]
    fn full_values_round_trip() {
        let config = complex64_config();
        let values = config.to_values();
        assert_eq!(
            values,
            vec![0, 0, 2, 1, 3, 2, 8, 2, 4, 2, 5 | 1 << 8, 3, 4, 10, 5]
        );
        assert_eq!(FilterConfig::from_values(&values).unwrap(), config);
    }

    #[test]
    fn layouts_of_version_1_are_still_read() {
        let v1 = [0, 0, 2, 1, 3, 1, 8, 2, 4, 2, 3, 4, 10, 5];
        let config = FilterConfig::from_values(&v1).unwrap();
        assert_eq!(config.element.element_type, ElementType::default());
        assert!(!config.exact_size);
        assert_eq!(config.chunk, vec![4, 10, 5]);
        assert_eq!(config.decode_limit(), 1600 + 100 + 65536);
        assert_eq!(config.check_decoded_len(1599), Ok(()));
        // A version-1 array of rank 2 (13 values) is a copied layout, as is version 2's.
        assert!(creation_options(&[0, 0, 0, 0, 0, 1, 8, 2, 4, 2, 2, 4, 10]).is_ok());
        assert!(creation_options(&[0, 0, 0, 0, 0, 2, 8, 2, 4, 2, 5, 1, 4]).is_ok());
    }

    #[test]
    fn params_split_complex_into_components_and_scale_lag() {
        let p = complex64_config().params(4 * 10 * 5 * 8);
        assert_eq!(
            (p.word_size, p.shape.clone(), p.time_axis, p.lag),
            (4, vec![4, 10, 5, 2], 1, 6)
        );
        let flat = complex64_config().params(13);
        assert_eq!((flat.word_size, flat.shape.len()), (1, 0));
    }

    #[test]
    fn decode_limit_leaves_room_for_earlier_filters() {
        let config = FilterConfig {
            exact_size: false,
            ..complex64_config()
        };
        assert_eq!(config.chunk_bytes(), Some(1600));
        assert_eq!(config.decode_limit(), 1600 + 100 + 65536);
        assert_eq!(config.check_decoded_len(1599), Ok(()));
    }

    #[test]
    fn chunks_coded_as_handed_over_decode_to_exactly_their_size() {
        let config = complex64_config();
        assert_eq!(config.decode_limit(), 1600);
        assert_eq!(config.check_decoded_len(1600), Ok(()));
        assert_eq!(
            config.check_decoded_len(1592).unwrap_err(),
            "corrupt chunk: it decodes to 1592 bytes, the dataset's chunks hold 1600"
        );
    }

    #[test]
    fn user_errors_are_explicit() {
        assert_eq!(UserOptions::parse(&[1]).unwrap().mode, Mode::Archive);
        let level9 = UserOptions::parse(&[1 + 256 * 9]).unwrap();
        assert_eq!((level9.mode, level9.level), (Mode::Archive, 9));
        assert_eq!(
            UserOptions::parse(&[256 * 10]).unwrap_err(),
            "unknown level 10 in cd_values[0] (mode + 256 * level: 0 = the mode's default, 1 \
             fastest to 9 smallest)"
        );
        assert_eq!(
            UserOptions::parse(&[7]).unwrap_err(),
            "unknown mode 7 in cd_values[0] (0 = fast, 1 = archive)"
        );
        assert_eq!(
            UserOptions::parse(&[0, 99]).unwrap_err(),
            "unknown predictor 99 in cd_values[1] (0 to 13)"
        );
        assert_eq!(
            UserOptions::parse(&[0, 4 << 8]).unwrap_err(),
            "unknown residual map 4 in cd_values[1] (0 to 3)"
        );
        assert_eq!(
            UserOptions::parse(&[0, 15 << 16]).unwrap_err(),
            "unknown residual coder 15 in cd_values[1] (0 to 14)"
        );
        assert_eq!(
            UserOptions::parse(&[0, 1 << 24]).unwrap_err(),
            "unknown bits 0x1000000 in cd_values[1] (predictor | map << 8 | coder << 16)"
        );
        let all = UserOptions::parse(&[0, 11 | 2 << 8 | 2 << 16]).unwrap();
        assert_eq!(
            (all.predictor, all.residual_map, all.coder),
            (
                Some(Predictor::Lorenzo),
                Some(ResidualMap::RotateSubtract),
                Some(Coder::Bitplane)
            )
        );
        assert_eq!(UserOptions::parse(&[0, 12]).unwrap().predictor, None);
        assert_eq!(
            UserOptions::parse(&[0, 0, 1_000_000_000]).unwrap_err(),
            "1000000000 threads in cd_values[2]; at most 1024 allowed (0 = all cores)"
        );
        let user = UserOptions::parse(&[0, 0, 0, 2, 0]).unwrap();
        assert_eq!(
            user.check_chunk(&[4, 4]).unwrap_err(),
            "time axis 2 in cd_values[3] is out of range for a rank-2 dataset"
        );
        let user = UserOptions::parse(&[0, 0, 0, 0, 17]).unwrap();
        assert_eq!(
            user.check_chunk(&[4, 4]).unwrap_err(),
            "lag 17 in cd_values[4] exceeds the 16 elements of one chunk along the time axis"
        );
    }

    #[test]
    fn creation_takes_user_values_or_a_complete_array_and_refuses_the_rest() {
        let full = complex64_config().to_values();
        assert_eq!(creation_options(&[1, 0, 2]).unwrap().mode, Mode::Archive);
        assert_eq!(creation_options(&full).unwrap(), complex64_config().user);
        for values in [&[0, 0, 0, 0, 0, 1, 99, 7][..], &[0, 0, 0, 0, 0, 0]] {
            assert_eq!(
                creation_options(values).unwrap_err(),
                format!(
                    "{} cd_values given; users set at most the first 5 (mode, coding, \
                     threads, time axis, lag), karoo appends the others itself",
                    values.len()
                )
            );
        }
        assert_eq!(
            creation_options(&full[..full.len() - 1]).unwrap_err(),
            "14 cd_values given and they are not a layout karoo wrote (chunk rank 3 does not \
             match the 14 cd_values); users set at most the first 5 (mode, coding, threads, \
             time axis, lag), karoo appends the others itself"
        );
        let mut future = full.clone();
        future[5] = LAYOUT_VERSION + 1;
        assert_eq!(
            creation_options(&future).unwrap_err(),
            "15 cd_values given and they are not a layout karoo wrote (unknown cd_values \
             layout version 3); users set at most the first 5 (mode, coding, threads, time \
             axis, lag), karoo appends the others itself"
        );
        // The user part's own errors come first.
        assert_eq!(
            creation_options(&[9, 0, 0, 0, 0, 1]).unwrap_err(),
            "unknown mode 9 in cd_values[0] (0 = fast, 1 = archive)"
        );
    }

    #[test]
    fn truncated_or_inconsistent_values_are_rejected() {
        let values = complex64_config().to_values();
        assert!(FilterConfig::from_values(&values[..10]).is_err());
        assert!(FilterConfig::from_values(&values[..13]).is_err());
        let mut bad = values.clone();
        bad[8] = 3;
        assert!(FilterConfig::from_values(&bad).is_err());
    }
}
