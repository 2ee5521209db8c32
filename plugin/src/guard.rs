//! Guard rails on the filter pipeline: a warning for combinations that defeat karoo.

use std::sync::atomic::{AtomicBool, Ordering};

/// HDF5's byte shuffle filter.
const SHUFFLE: i32 = 2;
/// Bitshuffle's registered filter id.
const BITSHUFFLE: i32 = 32008;

/// The warning for a pipeline (filter ids in write order) in which a byte or bit shuffle
/// runs before karoo (`karoo` is its filter id); `None` when there is nothing to say.
pub fn shuffle_warning(pipeline: &[i32], karoo: i32) -> Option<String> {
    let at = pipeline.iter().position(|&id| id == karoo)?;
    let name = pipeline[..at].iter().find_map(|&id| match id {
        SHUFFLE => Some("shuffle"),
        BITSHUFFLE => Some("bitshuffle"),
        _ => None,
    })?;
    Some(format!(
        "karoo: warning: a {name} filter runs before karoo in this dataset's pipeline; it \
         scatters each value's bytes, which destroys karoo's prediction along time (the data \
         stays lossless but hardly compresses); drop the shuffle (netCDF4 and h5netcdf enable \
         it by default)"
    ))
}

/// Whether chunks reach karoo as HDF5 hands them over in a pipeline (filter ids in write
/// order) with `karoo` in it: no filter before karoo but a byte shuffle, which keeps a
/// chunk's size.
pub fn chunks_reach_karoo_whole(pipeline: &[i32], karoo: i32) -> bool {
    (pipeline.iter().position(|&id| id == karoo))
        .is_some_and(|at| pipeline[..at].iter().all(|&id| id == SHUFFLE))
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// Prints `message` to stderr, once per process.
pub fn warn_once(message: &str) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("{message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_shuffle_before_karoo_is_reported() {
        let karoo = 52033;
        assert_eq!(shuffle_warning(&[karoo], karoo), None);
        assert_eq!(shuffle_warning(&[karoo, SHUFFLE], karoo), None);
        assert_eq!(shuffle_warning(&[3, karoo], karoo), None);
        assert_eq!(shuffle_warning(&[SHUFFLE, 1], karoo), None);
        let message = shuffle_warning(&[3, BITSHUFFLE, karoo], karoo).unwrap();
        assert!(message.starts_with("karoo: warning: a bitshuffle filter runs before karoo"));
        let message = shuffle_warning(&[SHUFFLE, karoo], karoo).unwrap();
        assert!(message.contains("a shuffle filter runs before karoo"));
        assert!(message.contains("destroys karoo's prediction along time"));
    }

    #[test]
    fn chunks_reach_karoo_whole_after_nothing_or_a_byte_shuffle() {
        let karoo = 52033;
        assert!(chunks_reach_karoo_whole(&[karoo], karoo));
        assert!(chunks_reach_karoo_whole(&[SHUFFLE, karoo, 1], karoo));
        assert!(!chunks_reach_karoo_whole(&[1, karoo], karoo));
        assert!(!chunks_reach_karoo_whole(&[SHUFFLE, 3, karoo], karoo));
        assert!(!chunks_reach_karoo_whole(&[SHUFFLE], karoo));
    }
}
