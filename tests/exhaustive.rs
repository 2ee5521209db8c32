//! Every one of the 2^32 float32 bit patterns round-trips through every predictor and
//! residual map (coded with bit planes, the fastest coder: the property under test is
//! the predictors' and maps' integer arithmetic; the coders have their own round-trip
//! and fuzz tests). Slow (minutes, release mode, all cores): ignored by default, run with
//! `scripts/exhaustive.sh` (`cargo test --release --test exhaustive -- --ignored`).
//! `KAROO_EXHAUSTIVE_SHARE=n` covers only 1/n of the patterns (every n-th block);
//! `KAROO_EXHAUSTIVE_PREDICTORS=3,4,11` only the predictors with those ids (13, none,
//! included when named); `KAROO_EXHAUSTIVE_CODER=4` codes with another coder (here
//! archive mode's context rANS).

use karoo::{compress, decompress_with, Coder, Params, Predictor, ResidualMap};
use rayon::prelude::*;

/// Patterns per chunk: 64 time steps of 65536 series (16 MiB).
const BLOCK: u64 = 1 << 22;

#[test]
#[ignore = "exhaustive: minutes in release mode; run scripts/exhaustive.sh"]
fn every_float32_bit_pattern_round_trips_through_every_predictor_and_map() {
    let share: u64 = std::env::var("KAROO_EXHAUSTIVE_SHARE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let blocks: Vec<u64> = (0..(1u64 << 32) / BLOCK).step_by(share as usize).collect();
    let only: Option<Vec<u32>> = std::env::var("KAROO_EXHAUSTIVE_PREDICTORS")
        .ok()
        .map(|ids| {
            ids.split(',')
                .filter_map(|id| id.trim().parse().ok())
                .collect()
        });
    let coder = std::env::var("KAROO_EXHAUSTIVE_CODER")
        .ok()
        .and_then(|id| Coder::from_id(id.trim().parse().ok()?))
        .unwrap_or(Coder::Bitplane);
    for predictor in Predictor::ALL.into_iter().chain([Predictor::Zero]) {
        if only.is_none() && predictor == Predictor::Zero {
            continue;
        }
        if only
            .as_ref()
            .is_some_and(|ids| !ids.contains(&u32::from(predictor.id())))
        {
            continue;
        }
        for map in ResidualMap::ALL {
            let params = Params {
                predictor: Some(predictor),
                residual_map: Some(map),
                coder: Some(coder),
                threads: 1,
                ..Params::new(4, &[64, (BLOCK / 64) as usize])
            };
            blocks.par_iter().for_each(|&block| {
                let data: Vec<u8> = (block * BLOCK..(block + 1) * BLOCK)
                    .flat_map(|p| (p as u32).to_le_bytes())
                    .collect();
                let packed = compress(&data, &params).expect("compress");
                let back = decompress_with(&packed, data.len() as u64, 1).expect("decompress");
                assert!(back == data, "{predictor:?} {map:?}: block {block} differs");
            });
            eprintln!(
                "{} + {map:?} + {}: {} patterns round-trip",
                predictor.name(),
                coder.name(),
                blocks.len() as u64 * BLOCK
            );
        }
    }
}
