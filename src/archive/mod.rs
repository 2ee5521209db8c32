//! Archive mode's entropy coders: the context model of neighbouring bit lengths, coded
//! with static rANS or canonical Huffman codes, its float-field tokens for values no
//! predictor helps, the value dictionary for tiles of few distinct words, and adaptive
//! binary coding of the bit planes of sparse tiles.

pub mod band_rans;
pub mod banded;
pub mod context;
pub mod context_ans;
pub mod context_bitplanes;
pub mod context_huffman;
pub mod dictionary;
pub mod float_fields;
pub mod huffman;
pub mod rans;
