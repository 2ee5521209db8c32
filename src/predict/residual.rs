//! Residual maps: how a word and its prediction become a residual, and back.
//!
//! Predictions are made on the *mapped* integer form of the words, so every map is a
//! pair: `to_int` (word bits to the integer the predictor sees) and the residual
//! function. All arithmetic is on bit patterns, so decoding is exact everywhere.

use crate::word::Word;

/// A residual map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResidualMap {
    /// The MeerKAT predictive packer's: predict on the raw bits, residual = word XOR prediction.
    Xor,
    /// ndzip's: rotate left by one (the float sign bit becomes the least
    /// significant bit, so opposite-sign values of similar magnitude stay close),
    /// subtract, fold the sign of the difference.
    RotateSubtract,
    /// Integers: subtract and fold the sign of the difference.
    Subtract,
}

impl ResidualMap {
    /// Every map, in id order.
    pub const ALL: [ResidualMap; 3] = [
        ResidualMap::Xor,
        ResidualMap::RotateSubtract,
        ResidualMap::Subtract,
    ];

    /// The map's id in cd_values and tile headers (never 0, which means "default").
    pub fn id(self) -> u8 {
        match self {
            ResidualMap::Xor => 1,
            ResidualMap::RotateSubtract => 2,
            ResidualMap::Subtract => 3,
        }
    }

    /// A short name for tables and messages (the Python package's option name).
    pub fn name(self) -> &'static str {
        match self {
            ResidualMap::Xor => "xor",
            ResidualMap::RotateSubtract => "rotate-subtract",
            ResidualMap::Subtract => "subtract",
        }
    }

    /// The map with id `id`.
    pub fn from_id(id: u32) -> Option<ResidualMap> {
        ResidualMap::ALL
            .into_iter()
            .find(|m| u32::from(m.id()) == id)
    }

    /// The integer the predictor sees for word `x`.
    #[inline(always)]
    pub fn to_int<T: Word>(self, x: T) -> T {
        match self {
            ResidualMap::RotateSubtract => x.rotate_left_one(),
            ResidualMap::Xor | ResidualMap::Subtract => x,
        }
    }

    /// The word whose integer form is `m` (inverse of `to_int`).
    #[inline(always)]
    pub fn from_int<T: Word>(self, m: T) -> T {
        match self {
            ResidualMap::RotateSubtract => m.rotate_right_one(),
            ResidualMap::Xor | ResidualMap::Subtract => m,
        }
    }

    /// Residual of integer `m` against prediction `p`.
    #[inline(always)]
    pub fn residual<T: Word>(self, m: T, p: T) -> T {
        match self {
            ResidualMap::Xor => m ^ p,
            ResidualMap::RotateSubtract | ResidualMap::Subtract => m.wrapping_sub(p).zigzag(),
        }
    }

    /// The integer `m` whose residual against `p` is `r` (inverse of `residual`).
    #[inline(always)]
    pub fn restore<T: Word>(self, r: T, p: T) -> T {
        match self {
            ResidualMap::Xor => r ^ p,
            ResidualMap::RotateSubtract | ResidualMap::Subtract => r.unzigzag().wrapping_add(p),
        }
    }

    /// Whether restoring adds the prediction: `restore(r, p + q) == restore(r, p) + q`
    /// for all words (wrapping), true of the subtracting maps, not of XOR. A recurrence
    /// of such restores is then a prefix sum.
    pub const fn is_additive(self) -> bool {
        matches!(self, ResidualMap::RotateSubtract | ResidualMap::Subtract)
    }
}

/// A residual map as a type, so hot loops are compiled once per map with no branch.
pub trait MapOp: Copy + Send + Sync {
    /// See [`ResidualMap::to_int`].
    fn to_int<T: Word>(x: T) -> T;
    /// See [`ResidualMap::from_int`].
    fn from_int<T: Word>(m: T) -> T;
    /// See [`ResidualMap::residual`].
    fn residual<T: Word>(m: T, p: T) -> T;
    /// See [`ResidualMap::restore`].
    fn restore<T: Word>(r: T, p: T) -> T;
    /// See [`ResidualMap::is_additive`].
    const ADDITIVE: bool;
}

macro_rules! map_op {
    ($name:ident, $map:expr) => {
        /// The map as a type (see [`MapOp`]).
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl MapOp for $name {
            const ADDITIVE: bool = $map.is_additive();
            #[inline(always)]
            fn to_int<T: Word>(x: T) -> T {
                $map.to_int(x)
            }
            #[inline(always)]
            fn from_int<T: Word>(m: T) -> T {
                $map.from_int(m)
            }
            #[inline(always)]
            fn residual<T: Word>(m: T, p: T) -> T {
                $map.residual(m, p)
            }
            #[inline(always)]
            fn restore<T: Word>(r: T, p: T) -> T {
                $map.restore(r, p)
            }
        }
    };
}

map_op!(XorOp, ResidualMap::Xor);
map_op!(RotateSubtractOp, ResidualMap::RotateSubtract);
map_op!(SubtractOp, ResidualMap::Subtract);

/// Evaluates `$body` with `$op` naming the [`MapOp`] type of the residual map `$map`, so
/// that the loops in `$body` are compiled once per map with no branch on it.
macro_rules! by_map {
    ($map:expr, $op:ident => $body:expr) => {
        match $map {
            $crate::predict::residual::ResidualMap::Xor => {
                type $op = $crate::predict::residual::XorOp;
                $body
            }
            $crate::predict::residual::ResidualMap::RotateSubtract => {
                type $op = $crate::predict::residual::RotateSubtractOp;
                $body
            }
            $crate::predict::residual::ResidualMap::Subtract => {
                type $op = $crate::predict::residual::SubtractOp;
                $body
            }
        }
    };
}
pub(crate) use by_map;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_map_inverts_on_edge_bit_patterns() {
        let words = [
            0u32,
            1,
            0x8000_0000,
            0x7fff_ffff,
            u32::MAX,
            0x7fc0_1234,
            0x3f80_0000,
        ];
        for map in ResidualMap::ALL {
            for &x in &words {
                assert_eq!(map.from_int(map.to_int(x)), x);
                for &p in &words {
                    let m = map.to_int(x);
                    assert_eq!(
                        map.restore(map.residual(m, p), p),
                        m,
                        "{map:?} {x:#x} {p:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn restores_of_the_subtracting_maps_add_the_prediction_and_xor_does_not() {
        let words = [0u32, 1, 2, 0x8000_0000, 0x7fff_ffff, u32::MAX, 0x7fc0_1234];
        for map in ResidualMap::ALL {
            let mut additive = true;
            for &r in &words {
                for &p in &words {
                    for &q in &words {
                        let sum = map.restore(r, p.wrapping_add(q));
                        additive &= sum == map.restore(r, p).wrapping_add(q);
                    }
                }
            }
            assert_eq!(additive, map.is_additive(), "{map:?}");
        }
    }

    #[test]
    fn rotate_subtract_keeps_opposite_signs_close() {
        let (a, b) = (1.0f32.to_bits(), (-1.0f32).to_bits());
        let map = ResidualMap::RotateSubtract;
        assert_eq!(map.residual(map.to_int(b), map.to_int(a)), 2);
        assert_eq!(ResidualMap::Xor.residual(b, a), 0x8000_0000);
    }
}
