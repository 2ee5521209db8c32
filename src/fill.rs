//! Fill at the end of a chunk: the last indices of its leading axis that hold nothing but
//! one repeated word, as HDF5 pads an edge chunk (a dataset whose length is not a
//! multiple of the chunk's) with the dataset's fill value, or as a flagged stretch at
//! the end of an observation reads. The encoder chooses its axis on the data before the
//! fill and, when its series run along that axis, codes the fill's rows as tiles of their
//! own (see [`Geometry::rows_apart`](crate::layout::Geometry::rows_apart)): the step
//! from the data to the fill then costs no row of large residuals, and the fill's tiles
//! code to a few bytes.

/// Fewest words of fill worth a tiling of their own: a few repeated words at the end of
/// a chunk are data, not padding.
pub const MIN_FILL_WORDS: usize = 64;

/// The fill at the end of a chunk's axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    /// The axis whose last indices are fill.
    pub axis: usize,
    /// Indices of `axis` that hold data, from the first: every index from this one on is
    /// fill, in every block of the axes before it.
    pub data: usize,
}

impl Fill {
    /// The fill of a chunk of `shape` (`word`-byte words) at the end of `axis`: the
    /// indices of `axis` after which each block of the axes before `axis` holds only
    /// copies of its own last word, when there are such indices and they hold at least
    /// [`MIN_FILL_WORDS`] words in all. None when the chunk is fill throughout (there is
    /// no data to set apart from it).
    pub fn at_end_of(data: &[u8], shape: &[usize], axis: usize, word: usize) -> Option<Fill> {
        let slab_words: usize = shape[axis + 1..].iter().product();
        let len = shape[axis];
        let block = len * slab_words * word;
        if block == 0 || !data.len().is_multiple_of(block) {
            return None;
        }
        let mut kept = 0;
        for block in data.chunks_exact(block) {
            let filled = repeats_at_end(block, word);
            let data_words = block.len() / word - filled;
            kept = kept.max(data_words.div_ceil(slab_words));
            if kept == len {
                return None;
            }
        }
        let blocks = data.len() / block;
        let fill_words = (len - kept) * slab_words * blocks;
        (kept > 0 && fill_words >= MIN_FILL_WORDS).then_some(Fill { axis, data: kept })
    }
}

/// Words at the end of `block` (of `word`-byte words, at least one) equal to its last.
fn repeats_at_end(block: &[u8], word: usize) -> usize {
    let mut words = block.rchunks_exact(word);
    let Some(last) = words.next() else {
        return 0;
    };
    1 + words.take_while(|w| *w == last).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn finds_the_rows_of_zeros_after_the_data() {
        // 16 rows of 16 words, the last 4 rows zeros.
        let mut values: Vec<u32> = (1..=12 * 16).collect();
        values.resize(16 * 16, 0);
        let fill = Fill::at_end_of(&words(&values), &[16, 16], 0, 4);
        assert_eq!(fill, Some(Fill { axis: 0, data: 12 }));
        // Some zeros at the end of the last data row do not count as fill.
        values[12 * 16 - 3..12 * 16].fill(0);
        let fill = Fill::at_end_of(&words(&values), &[16, 16], 0, 4);
        assert_eq!(fill, Some(Fill { axis: 0, data: 12 }));
        // Fewer than 64 words of fill (4 rows of 8) are left as they are.
        let mut narrow: Vec<u32> = (1..=12 * 8).collect();
        narrow.resize(16 * 8, 0);
        assert_eq!(Fill::at_end_of(&words(&narrow), &[16, 8], 0, 4), None);
    }

    #[test]
    fn any_repeated_word_is_fill_in_every_block() {
        // Two blocks of 10 rows of 16 words: NaN fill after 6 rows in one, 7 in the other.
        let nan = f32::NAN.to_bits();
        let mut values: Vec<u32> = (1..=320).collect();
        values[6 * 16..160].fill(nan);
        values[160 + 7 * 16..].fill(nan);
        let fill = Fill::at_end_of(&words(&values), &[2, 10, 16], 1, 4);
        assert_eq!(fill, Some(Fill { axis: 1, data: 7 }));
    }

    #[test]
    fn no_fill_in_data_too_little_fill_or_only_fill() {
        let values: Vec<u32> = (1..=128).collect();
        assert_eq!(Fill::at_end_of(&words(&values), &[16, 8], 0, 4), None);
        // One row of 8 zeros is below the least fill worth its own tiles.
        let mut short = values.clone();
        short[120..].fill(0);
        assert_eq!(Fill::at_end_of(&words(&short), &[16, 8], 0, 4), None);
        assert_eq!(
            Fill::at_end_of(&words(&short), &[2, 8, 8], 1, 4),
            None,
            "one block of data throughout keeps every index"
        );
        assert_eq!(Fill::at_end_of(&words(&[0; 128]), &[16, 8], 0, 4), None);
    }
}
