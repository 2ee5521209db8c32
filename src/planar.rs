//! Planar components: the words of a chunk whose elements have several components
//! (complex numbers, records of equal numeric fields) rearranged so that each
//! component's words form one plane, all real parts, then all imaginary parts.
//!
//! Real and imaginary parts, or the fields of a record, often differ in magnitude and
//! noise (the imaginary part of an autocorrelation is zero); interleaved, they share the
//! fast coders' groups and the archive coders' contexts. As planes, each is predicted and
//! coded among its own kind. A chunk's words of shape `(d0, ..., d(r-2), m)` (with `m`
//! components) become the *coded array* of shape `(m, d0, ..., d(r-2))`: the first axis
//! moved last gives the data back.

use crate::buffers;
use crate::params::Params;

/// How a chunk's components become planes: the parameters to code the coded array with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planar {
    /// Components per element (`m`, at least 2).
    pub components: usize,
    /// `params` for the coded array: its shape (components first, then the element
    /// axes), one word per element, the time axis one further in, the lag counted in one
    /// component's words.
    pub params: Params,
}

impl Planar {
    /// The planar layout of a chunk of (validated) `shape` and `params`, when its
    /// elements have several components, the caller's time axis is not theirs and the
    /// caller's lag, if any, is a whole number of elements.
    pub fn of(shape: &[usize], params: &Params) -> Option<Planar> {
        let m = params.components;
        if m < 2
            || shape.len() < 2
            || params.time_axis + 1 >= shape.len()
            || !params.lag.is_multiple_of(m)
        {
            return None;
        }
        let mut coded = Vec::with_capacity(shape.len());
        coded.push(m);
        coded.extend_from_slice(&shape[..shape.len() - 1]);
        Some(Planar {
            components: m,
            params: Params {
                shape: coded,
                time_axis: params.time_axis + 1,
                lag: params.lag / m,
                components: 1,
                ..params.clone()
            },
        })
    }
}

/// A chunk's words as planes, in a buffer from the pool (see [`buffers`]) that goes
/// back to it when dropped.
pub struct Planes(Vec<u8>);

impl std::ops::Deref for Planes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Planes {
    fn drop(&mut self) {
        buffers::give(std::mem::take(&mut self.0));
    }
}

/// `words` (of `w` bytes, `m` components per element) as planes: word `i * m + c`
/// moves to `c * n + i`, where `n` is the element count.
pub fn split(words: &[u8], w: usize, m: usize) -> Planes {
    let mut out = buffers::take(words.len());
    out.resize(words.len(), 0);
    match w {
        1 => split_words::<1>(words, m, &mut out),
        2 => split_words::<2>(words, m, &mut out),
        4 => split_words::<4>(words, m, &mut out),
        _ => split_words::<8>(words, m, &mut out),
    }
    Planes(out)
}

/// The inverse of [`split`] into `out` (as long as `planes`). A count `m` of 0 (a
/// hostile chunk of no words can declare one) moves nothing.
pub fn join_into(planes: &[u8], w: usize, m: usize, out: &mut [u8]) {
    join_part_into(planes, w, m, 0, out);
}

/// The elements from number `first` of the inverse of [`split`], into `out` (whole
/// elements, at most as many as the planes hold from `first`).
pub fn join_part_into(planes: &[u8], w: usize, m: usize, first: usize, out: &mut [u8]) {
    let n = planes.len() / (w * m).max(1);
    if m == 0 || n == 0 {
        return;
    }
    let count = (out.len() / (w * m)).min(n.saturating_sub(first));
    let parts: Vec<&[u8]> = planes
        .chunks_exact(n * w)
        .map(|plane| &plane[first * w..(first + count) * w])
        .collect();
    if parts.len() == m {
        join_slices_into(&parts, w, out);
    }
}

/// The words of the equally long `planes` (of `w`-byte words), one per component,
/// interleaved into whole elements at the start of `out` (at most as many as fit).
pub fn join_slices_into(planes: &[&[u8]], w: usize, out: &mut [u8]) {
    if planes.is_empty() {
        return;
    }
    crate::isa::vectorised(
        #[inline(always)]
        || match w {
            1 => join_words::<1>(planes, out),
            2 => join_words::<2>(planes, out),
            4 => join_words::<4>(planes, out),
            _ => join_words::<8>(planes, out),
        },
    );
}

fn split_words<const W: usize>(words: &[u8], m: usize, out: &mut [u8]) {
    let n = words.len() / (W * m);
    if n == 0 {
        return;
    }
    for (c, plane) in out.chunks_exact_mut(n * W).enumerate() {
        let elements = words.chunks_exact(m * W);
        for (word, element) in plane.chunks_exact_mut(W).zip(elements) {
            word.copy_from_slice(&element[c * W..(c + 1) * W]);
        }
    }
}

#[inline(always)]
fn join_words<const W: usize>(planes: &[&[u8]], out: &mut [u8]) {
    let m = planes.len();
    let count = (out.len() / (W * m)).min(planes.iter().map(|p| p.len() / W).min().unwrap_or(0));
    if count == 0 {
        return;
    }
    let (out, _) = out.as_chunks_mut::<W>();
    let out = &mut out[..count * m];
    if let [re, im] = planes {
        // Complex numbers: both planes in one pass.
        let (re, im) = (
            &re.as_chunks::<W>().0[..count],
            &im.as_chunks::<W>().0[..count],
        );
        let (elements, _) = out.as_chunks_mut::<2>();
        for (element, (a, b)) in elements.iter_mut().zip(re.iter().zip(im)) {
            *element = [*a, *b];
        }
        return;
    }
    for (c, plane) in planes.iter().enumerate() {
        let (plane, _) = plane.as_chunks::<W>();
        for (element, word) in out.chunks_exact_mut(m).zip(plane) {
            element[c] = *word;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_puts_each_component_in_its_plane_and_join_restores() {
        for w in [1usize, 2, 4, 8] {
            for m in [2usize, 3, 4] {
                for n in [0usize, 1, 5, 64] {
                    let words: Vec<u8> = (0..n * m * w).map(|i| (i * 7 + 3) as u8).collect();
                    let planes = split(&words, w, m);
                    for i in 0..n {
                        for c in 0..m {
                            assert_eq!(
                                planes[(c * n + i) * w..(c * n + i + 1) * w],
                                words[(i * m + c) * w..(i * m + c + 1) * w],
                                "w {w} m {m} n {n} element {i} component {c}"
                            );
                        }
                    }
                    let mut back = vec![0xAA; words.len()];
                    join_into(&planes, w, m, &mut back);
                    assert_eq!(back, words, "w {w} m {m} n {n}");
                    // In pieces of 3 elements and a rest.
                    let mut back = vec![0xAA; words.len()];
                    for (i, piece) in back.chunks_mut(3 * w * m).enumerate() {
                        join_part_into(&planes, w, m, 3 * i, piece);
                    }
                    assert_eq!(back, words, "w {w} m {m} n {n} in pieces");
                }
            }
            // A hostile chunk's count of 0 components moves nothing.
            join_into(&[], w, 0, &mut []);
        }
    }

    #[test]
    fn the_layout_moves_components_first_and_counts_the_lag_in_one_component() {
        let mut params = Params::new(4, &[3, 5, 2]);
        params.components = 2;
        params.time_axis = 1;
        params.lag = 10;
        let planar = Planar::of(&[3, 5, 2], &params).unwrap();
        assert_eq!(planar.params.shape, vec![2, 3, 5]);
        assert_eq!(
            (
                planar.params.time_axis,
                planar.params.lag,
                planar.components
            ),
            (2, 5, 2)
        );
        assert_eq!(planar.params.components, 1);
        // A lag that splits elements, a time axis on the components, and single-word
        // elements stay interleaved.
        params.lag = 7;
        assert_eq!(Planar::of(&[3, 5, 2], &params), None);
        params.lag = 0;
        params.time_axis = 2;
        assert_eq!(Planar::of(&[3, 5, 2], &params), None);
        params.time_axis = 1;
        params.lag = 0;
        params.components = 1;
        assert_eq!(Planar::of(&[3, 5, 2], &params), None);
    }
}
