//! Arbitrary bytes into the decoder: it must return Ok or Err, never panic, and never
//! allocate past its limit.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = karoo::decompress_with(data, 1 << 24, 1);
    if let Ok(len) = karoo::decoded_len(data, 1 << 24) {
        let mut out = vec![0u8; len];
        let _ = karoo::decompress_into(data, &mut out, 2);
    }
});
