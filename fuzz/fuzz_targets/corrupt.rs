//! Valid chunks with fuzzer-chosen edits past the header (whose checksum would stop
//! blind mutation): the decoder must return an error or exactly the original data.
#![no_main]

use karoo::{Coder, Mode, Params, Predictor, ResidualMap};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    word: u8,
    rows: u8,
    predictor: u8,
    map: u8,
    coder: u8,
    /// Elements of two words (complex numbers): the planar components path.
    complex: bool,
    edits: Vec<(u16, u8)>,
    data: Vec<u8>,
}

/// `None` (auto) or one of `all`, the codec's own list, so that a value added to the
/// codec is fuzzed with no change here.
fn pick<T: Copy>(all: &[T], byte: u8) -> Option<T> {
    all.get(usize::from(byte) % (all.len() + 1)).copied()
}

fuzz_target!(|input: Input| {
    let word = [1usize, 2, 4, 8][usize::from(input.word % 4)];
    let rows = usize::from(input.rows % 16) + 1;
    let cols = (input.data.len() / word / rows).max(1);
    let (shape, components) = if input.complex && cols >= 2 {
        (vec![rows, cols / 2, 2], 2)
    } else {
        (vec![rows, cols], 1)
    };
    let words: usize = shape.iter().product();
    let data: Vec<u8> = input.data.iter().copied().chain(std::iter::repeat(7)).take(words * word).collect();
    let params = Params {
        predictor: pick(&Predictor::ALL.into_iter().chain([Predictor::Zero]).collect::<Vec<_>>(), input.predictor),
        residual_map: pick(&ResidualMap::ALL, input.map),
        coder: pick(&Coder::ALL, input.coder & 0x7f),
        mode: Mode::ALL[usize::from(input.coder >> 7) % Mode::ALL.len()],
        components,
        ..Params::new(word, &shape)
    };
    let mut packed = karoo::compress(&data, &params).expect("valid parameters");
    let (_, header) = karoo::internals::Header::parse(&packed, u64::MAX).expect("own header");
    let body = packed.len().saturating_sub(header);
    if body == 0 {
        return;
    }
    for &(at, value) in &input.edits {
        let at = header + usize::from(at) % body;
        packed[at] ^= value;
    }
    if let Ok(back) = karoo::decompress_with(&packed, data.len() as u64, 1) {
        assert_eq!(back, data, "a corrupted chunk decoded to different data");
    }
});
