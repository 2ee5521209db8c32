//! Arbitrary cd_values (as HDF5 would hand them to the filter, or as a user sets them):
//! parsing returns Ok or a message, and whatever parses drives the codec safely.
#![no_main]

use h5karoo::cd_values::{FilterConfig, UserOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Vec<u32>, Vec<u8>)| {
    let (values, data) = input;
    if let Ok(user) = UserOptions::parse(&values) {
        let _ = user.check_chunk(&[4, 4]);
    }
    if let Ok(config) = FilterConfig::from_values(&values) {
        let _ = config.decode_limit();
        if data.len() <= 1 << 16 {
            let params = config.params(data.len());
            if let Ok(packed) = karoo::compress(&data, &params) {
                assert_eq!(karoo::decompress(&packed).expect("decode"), data);
            }
        }
    }
});
