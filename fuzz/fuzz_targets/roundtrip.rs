//! Arbitrary data, shapes, word sizes, predictors, maps, coders and thread counts:
//! whatever compresses must decompress to the same bytes, whatever the thread count.
#![no_main]

use karoo::{Coder, ElementKind, Mode, Params, Predictor, ResidualMap};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    word: u8,
    dims: Vec<u8>,
    time_axis: u8,
    lag: u16,
    predictor: u8,
    map: u8,
    coder: u8,
    element: u8,
    complex: bool,
    threads: u8,
    data: Vec<u8>,
}

fuzz_target!(|input: Input| {
    let word = [1usize, 2, 4, 8][usize::from(input.word % 4)];
    let mut shape: Vec<usize> = input.dims.iter().take(4).map(|&d| usize::from(d % 17)).collect();
    if input.complex {
        shape.push(2);
    }
    if shape.is_empty() {
        shape.push(input.data.len() / word);
    }
    let words: usize = shape.iter().product();
    if words * word > 1 << 16 {
        return;
    }
    let data: Vec<u8> = if input.data.is_empty() {
        vec![0; words * word]
    } else {
        input.data.iter().cycle().take(words * word).copied().collect()
    };
    let params = Params {
        time_axis: usize::from(input.time_axis) % shape.len(),
        lag: usize::from(input.lag),
        predictor: Predictor::from_id(u32::from(input.predictor % 14)),
        residual_map: ResidualMap::from_id(u32::from(input.map % 4)),
        coder: Coder::from_id(u32::from(input.coder % 8)),
        mode: if input.coder & 0x80 != 0 { Mode::Archive } else { Mode::Fast },
        element: [ElementKind::Float, ElementKind::Integer, ElementKind::Other][usize::from(input.element % 3)],
        components: if input.complex { 2 } else { 1 },
        threads: usize::from(input.threads % 4),
        ..Params::new(word, &shape)
    };
    let Ok(packed) = karoo::compress(&data, &params) else {
        return; // invalid parameters (e.g. lag beyond the plane) are refused, fine
    };
    assert!(packed.len() <= data.len() + 88 + 8 * shape.len() + 4, "output larger than input + header");
    let back = karoo::decompress_with(&packed, data.len() as u64, 1).expect("decode what was encoded");
    assert_eq!(back, data);
    let again = karoo::compress(&data, &Params { threads: 3, ..params }).expect("compress");
    assert_eq!(again, packed, "output depends on the thread count");
});
