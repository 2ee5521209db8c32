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
    order: u8,
    map: u8,
    coder: u8,
    element: u8,
    complex: bool,
    threads: u8,
    /// With 8-byte words: the data are float32 words widened to float64 (narrowed chunks).
    widen: bool,
    data: Vec<u8>,
}

/// `None` (auto) or one of `all`, the codec's own list, so that a value added to the
/// codec is fuzzed with no change here.
fn pick<T: Copy>(all: &[T], byte: u8) -> Option<T> {
    all.get(usize::from(byte) % (all.len() + 1)).copied()
}

/// Auto, one of the codec's predictors, or (high bit set) any value of the enum, valid
/// or not: what `compress` accepts must decode.
fn predictor(byte: u8, n: u8) -> Option<Predictor> {
    if byte & 0x80 != 0 {
        return Some([Predictor::Lagrange(n), Predictor::Mean(n), Predictor::Median(n)][usize::from(byte % 3)]);
    }
    let all: Vec<Predictor> = Predictor::ALL.into_iter().chain([Predictor::Zero]).collect();
    pick(&all, byte)
}

/// The float64 word equal to float32 word `f`, NaN payloads kept (docs/format.md).
fn widen(f: u32) -> u64 {
    if f & 0x7f80_0000 == 0x7f80_0000 {
        return u64::from(f >> 31) << 63 | 0x7ff0_0000_0000_0000 | u64::from(f & 0x7f_ffff) << 29;
    }
    f64::from(f32::from_bits(f)).to_bits()
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
    } else if word == 8 && input.widen {
        let narrow: Vec<u8> = input.data.iter().cycle().take(words * 4).copied().collect();
        narrow.chunks_exact(4).flat_map(|f| widen(u32::from_le_bytes(f.try_into().unwrap())).to_le_bytes()).collect()
    } else {
        input.data.iter().cycle().take(words * word).copied().collect()
    };
    let params = Params {
        time_axis: usize::from(input.time_axis) % shape.len(),
        lag: usize::from(input.lag),
        predictor: predictor(input.predictor, input.order),
        residual_map: pick(&ResidualMap::ALL, input.map),
        coder: pick(&Coder::ALL, input.coder & 0x7f),
        mode: Mode::ALL[usize::from(input.coder >> 7) % Mode::ALL.len()],
        element: ElementKind::ALL[usize::from(input.element) % ElementKind::ALL.len()],
        components: if input.complex { 2 } else { 1 },
        threads: usize::from(input.threads % 4),
        ..Params::new(word, &shape)
    };
    let Ok(packed) = karoo::compress(&data, &params) else {
        return; // invalid parameters (a lag beyond the plane, a predictor karoo does not have) are refused, fine
    };
    // A stored chunk's header: 14 bytes, 7 + rank varints of at most 10 bytes, checksums.
    assert!(packed.len() <= data.len() + 14 + 10 * (7 + shape.len()) + 12, "output larger than input + header");
    let back = karoo::decompress_with(&packed, data.len() as u64, 1).expect("decode what was encoded");
    assert_eq!(back, data);
    let again = karoo::compress(&data, &Params { threads: 3, ..params }).expect("compress");
    assert_eq!(again, packed, "output depends on the thread count");
});
