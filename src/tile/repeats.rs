//! Long repeats in a tile's residuals: blocks of words that occur earlier in the tile,
//! which a general-purpose coder's match finder codes almost for free and the context
//! coders do not see (the cross-hand products XY and YX of an autocorrelation, whose
//! real parts are equal, land in planes a row apart once the components are split).

use crate::word::Word;

/// Words of the window a repeat is recognised by: shorter repeats are left to the
/// entropy coders.
const WINDOW: usize = 64;
/// Multiplier that spreads a word over the hash (odd, from the golden ratio).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
/// Anchors are one position in 2^ANCHOR_BITS.
const ANCHOR_BITS: u32 = 4;
/// Positions whose anchors are found before they are looked up.
const ANCHOR_BLOCK: usize = 1024;

/// About the words of `values` covered by repeats of at least [`WINDOW`] words of
/// earlier words of `values` (any distance, any alignment). Runs of one value (zeros
/// and constants, which the context coders code cheaply) are not counted.
///
/// One pass with a gear hash (each word's hash shifted one bit per word, so the hash
/// covers the last [`WINDOW`] words): windows at anchors (positions whose hash has its
/// top [`ANCHOR_BITS`] bits clear, chosen by content so that a repeat has the anchors
/// of its original) are looked up in a table of the earlier anchors' hashes; each
/// anchor found stands for 2^ANCHOR_BITS words. A hash collision can only overcount,
/// by one anchor per collision.
pub fn repeated_words<T: Word>(values: &[T]) -> usize {
    let n = values.len();
    if n < 2 * WINDOW {
        return 0;
    }
    let mut table = AnchorTable::new(n);
    let hash = |v: T| v.to_u64().wrapping_add(1).wrapping_mul(MULTIPLIER);
    // The hash of the first window's words but its last.
    let mut h = values[..WINDOW - 1]
        .iter()
        .fold(0u64, |h, &v| (h << 1).wrapping_add(hash(v)));
    let mut covered = 0;
    // Anchors are found a block of positions at a time with no branch per word (one in
    // 2^ANCHOR_BITS is an anchor, a branch on it would be mispredicted often), then
    // looked up in order.
    let mut found = [(0usize, 0u64); ANCHOR_BLOCK];
    for block_start in (WINDOW - 1..n).step_by(ANCHOR_BLOCK) {
        let block = &values[block_start..n.min(block_start + ANCHOR_BLOCK)];
        let mut count = 0;
        for (at, &v) in (block_start..).zip(block) {
            h = (h << 1).wrapping_add(hash(v));
            found[count] = (at, h);
            count += usize::from(h >> (64 - ANCHOR_BITS) == 0);
        }
        for &(at, h) in &found[..count] {
            covered += table.look_up(values, at, h);
        }
    }
    covered.min(n)
}

/// The anchors met so far, by the hash of their window.
struct AnchorTable {
    /// Open addressing: each slot holds a window's hash (low bit set; 0 is empty).
    hashes: Vec<u64>,
    /// The position of the first window with the slot's hash.
    firsts: Vec<usize>,
    /// Bits of a slot's index.
    index_bits: u32,
}

impl AnchorTable {
    /// A table for the anchors of `n` words (four slots an anchor, as one in
    /// 2^ANCHOR_BITS positions is).
    fn new(n: usize) -> AnchorTable {
        let slots = (4 * (n >> ANCHOR_BITS)).next_power_of_two().max(64);
        AnchorTable {
            hashes: vec![0; slots],
            firsts: vec![0; slots],
            index_bits: slots.trailing_zeros(),
        }
    }

    /// The words the anchor at `at` of `values` (whose window hashes to `h`) stands for
    /// as a repeat: 2^ANCHOR_BITS when an earlier window, ending at least a window
    /// before, had its hash; else 0, the anchor then recorded if its hash is new.
    /// Anchors in a run of one value, judged by a few of the window's words, count 0.
    fn look_up<T: Word>(&mut self, values: &[T], at: usize, h: u64) -> usize {
        let v = values[at];
        let start = at + 1 - WINDOW;
        if [start, at - 31, at - 7, at - 1]
            .iter()
            .all(|&i| values[i] == v)
        {
            return 0;
        }
        let key = h | 1;
        let mask = self.hashes.len() - 1;
        let mut s = ((key << ANCHOR_BITS) >> (64 - self.index_bits)) as usize;
        while self.hashes[s] != 0 && self.hashes[s] != key {
            s = (s + 1) & mask;
        }
        if self.hashes[s] == 0 {
            self.hashes[s] = key;
            self.firsts[s] = at;
        } else if self.firsts[s] + WINDOW <= at {
            return 1 << ANCHOR_BITS;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<u32> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u32
            })
            .collect()
    }

    #[test]
    fn noise_has_no_repeats() {
        assert_eq!(repeated_words(&noise(100_000, 7)), 0);
    }

    #[test]
    fn a_copied_row_is_found_at_any_distance_and_alignment() {
        for (row, offset) in [(1536, 0), (1000, 3), (777, 5)] {
            let mut values = noise(4 * row, 11);
            let copy: Vec<u32> = values[offset..offset + row].to_vec();
            values[2 * row + offset..3 * row + offset].copy_from_slice(&copy);
            let covered = repeated_words(&values);
            // Anchors fall about one in 16 words: the count is near the copy's length.
            assert!(
                covered >= row / 2 && covered <= 3 * row / 2,
                "row {row}: {covered}"
            );
        }
    }

    #[test]
    fn runs_of_one_value_do_not_count() {
        let mut values = noise(10_000, 3);
        values[2000..6000].fill(0);
        values[7000..9000].fill(42);
        assert_eq!(repeated_words(&values), 0);
    }

    /// [`repeated_words`] word by word, each anchor looked up as it is met.
    fn repeated_words_one_by_one(values: &[u32]) -> usize {
        let n = values.len();
        if n < 2 * WINDOW {
            return 0;
        }
        let mut table = AnchorTable::new(n);
        let (mut h, mut covered) = (0u64, 0);
        for (at, &v) in values.iter().enumerate() {
            let word = u64::from(v).wrapping_add(1).wrapping_mul(MULTIPLIER);
            h = (h << 1).wrapping_add(word);
            if h >> (64 - ANCHOR_BITS) == 0 && at + 1 >= WINDOW {
                covered += table.look_up(values, at, h);
            }
        }
        covered.min(n)
    }

    #[test]
    fn anchors_found_a_block_at_a_time_count_as_one_by_one() {
        // Copies across block boundaries, runs, few distinct values (many collisions
        // and anchors) and lengths around the block size.
        for (n, distinct) in [(128, 0), (1087, 0), (1088, 3), (5000, 0), (40_000, 5)] {
            let mut values = noise(n, n as u64 + 1);
            if distinct > 0 {
                values.iter_mut().for_each(|v| *v %= distinct);
            }
            if n >= 4000 {
                let copy = values[100..1500].to_vec();
                values[2000..3400].copy_from_slice(&copy);
                values[3500..3900].fill(9);
            }
            let expected = repeated_words_one_by_one(&values);
            assert_eq!(repeated_words(&values), expected, "{n} words");
        }
        let copied = [noise(3000, 5), noise(3000, 5)].concat();
        assert!(repeated_words(&copied) > 2000);
        assert_eq!(repeated_words(&copied), repeated_words_one_by_one(&copied));
    }

    #[test]
    fn short_inputs_have_none() {
        assert_eq!(repeated_words(&[1u32; 127]), 0);
        assert_eq!(repeated_words::<u64>(&[]), 0);
    }
}
