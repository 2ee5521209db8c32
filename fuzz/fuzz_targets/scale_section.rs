//! Arbitrary bytes as a chunk's scale section, and those scales applied to a chunk of
//! words: parsing returns Ok or Err and dequantising never panics or wraps.
#![no_main]

use karoo::internals::Scales;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u16, &[u8])| {
    let (words, section) = input;
    if let Ok((scales, _)) = Scales::parse(section, u64::from(words)) {
        let mut bytes = vec![0u8; usize::from(words) * 4];
        karoo::internals::dequantise_bytes(&mut bytes, 4, scales.group, &scales.scales);
    }
});
