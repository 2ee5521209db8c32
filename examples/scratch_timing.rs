use karoo::*;
use std::time::Instant;
fn main() {
    let (t, c) = (8usize, 131072usize);
    let mut x = vec![0f32; t * c];
    let mut s = 1u64;
    for i in 0..t * c {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let noise = (s % 1000) as f32 / 1e5;
        x[i] = ((i % c) as f32 * 0.01).sin() * (1.0 + (i / c) as f32 * 0.001) + noise;
    }
    let data: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    for (name, p) in [
        (
            "prev rotsub lzb",
            Params {
                predictor: Some(Predictor::PREVIOUS),
                residual_map: Some(ResidualMap::RotateSubtract),
                coder: Some(Coder::LeadingZeroBytes),
                threads: 1,
                ..Params {
                    components: 2,
                    ..Params::new(4, &[t, c / 2, 2])
                }
            },
        ),
        (
            "auto lzb",
            Params {
                coder: Some(Coder::LeadingZeroBytes),
                threads: 1,
                ..Params {
                    components: 2,
                    ..Params::new(4, &[t, c / 2, 2])
                }
            },
        ),
        (
            "auto rice",
            Params {
                threads: 1,
                ..Params {
                    components: 2,
                    ..Params::new(4, &[t, c / 2, 2])
                }
            },
        ),
    ] {
        if let Ok(only) = std::env::var("ONLY") {
            if !name.contains(only.as_str()) {
                continue;
            }
        }
        let n = 5;
        let start = Instant::now();
        let mut packed = vec![];
        for _ in 0..n {
            packed = compress(&data, &p).unwrap();
        }
        let ce = start.elapsed().as_secs_f64() / n as f64;
        println!("tiles: {:?}", tiles_used(&packed));
        let start = Instant::now();
        for _ in 0..n {
            let _ = decompress_with(&packed, u64::MAX, 1).unwrap();
        }
        let de = start.elapsed().as_secs_f64() / n as f64;
        let start = Instant::now();
        let mut copy = vec![0u8; data.len()];
        for _ in 0..n {
            copy.copy_from_slice(&data);
            std::hint::black_box(&copy);
        }
        let me = start.elapsed().as_secs_f64() / n as f64;
        println!(
            "{name}: ratio {:.3} compress {:.2} GB/s decompress {:.2} GB/s memcpy {:.1} GB/s",
            packed.len() as f64 / data.len() as f64,
            data.len() as f64 / ce / 1e9,
            data.len() as f64 / de / 1e9,
            data.len() as f64 / me / 1e9
        );
    }
}
#[allow(dead_code)]
fn tiles_used(packed: &[u8]) -> Vec<(u8, u8)> {
    let (h, len) = karoo::format::Header::parse(packed, u64::MAX).unwrap();
    let mut at = len;
    h.tile_sizes
        .iter()
        .map(|&s| {
            let r = (packed[at], packed[at + 1]);
            at += s as usize;
            r
        })
        .collect()
}
