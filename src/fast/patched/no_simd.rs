//! Off x86_64, the kernel types of the AVX2 and AVX-512 modules have no values: their
//! `detect` finds none, so patched packing runs its portable loops, and the branches
//! that would call a kernel compile away.

use super::group::{GroupLayout, GROUP};

/// Stands for the AVX2 kernels where there are none; never made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Avx2 {}

impl Avx2 {
    /// None: there are no such kernels here.
    pub fn detect() -> Option<Avx2> {
        None
    }

    /// Never called (no `Avx2` exists).
    pub fn unpack(self, _src: &[u8], _width: u32, _out: &mut [u32; GROUP]) {
        match self {}
    }

    /// Never called (no `Avx2` exists).
    pub fn packs(self, _width: u32) -> bool {
        match self {}
    }

    /// Never called (no `Avx2` exists).
    pub fn pack(self, _values: &[u32; GROUP], _width: u32, _buf: &mut [u8]) -> usize {
        match self {}
    }

    /// Never called (no `Avx2` exists).
    pub fn expand_or(
        self,
        _high: &[u32; GROUP],
        _bitmap: u32,
        _shift: u32,
        _out: &mut [u32; GROUP],
    ) -> (u32, bool) {
        match self {}
    }

    /// Never called (no `Avx2` exists).
    pub fn choose(self, _values: &[u32; GROUP]) -> GroupLayout {
        match self {}
    }

    /// Never called (no `Avx2` exists).
    pub fn gather_longer(self, _values: &[u32; GROUP], _b: u32, _high: &mut [u32; GROUP]) -> u32 {
        match self {}
    }

    /// Never called (no `Avx2` exists).
    pub fn run<R>(self, _f: impl FnOnce() -> R) -> R {
        match self {}
    }
}

/// Stands for the AVX-512 kernels where there are none; never made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Avx512 {}

impl Avx512 {
    /// None: there are no such kernels here.
    pub fn detect() -> Option<Avx512> {
        None
    }

    /// Never called (no `Avx512` exists).
    pub fn survey_wide(self, _values: &[u64; GROUP], _above: &mut [u32; 64]) -> (u32, u32) {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn unpack_wide(self, _src: &[u8], _width: u32, _out: &mut [u64; GROUP]) {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn gather_longer_wide(
        self,
        _values: &[u64; GROUP],
        _b: u32,
        _high: &mut [u64; GROUP],
    ) -> u32 {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn unpack(self, _src: &[u8], _width: u32, _out: &mut [u32; GROUP]) {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn expand_checked(
        self,
        _high: &[u32; GROUP],
        _bitmap: u32,
        _shift: u32,
        _width: u32,
        _out: &mut [u32; GROUP],
    ) -> bool {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn choose(self, _values: &[u32; GROUP]) -> GroupLayout {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn gather_longer(self, _values: &[u32; GROUP], _b: u32, _high: &mut [u32; GROUP]) -> u32 {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn pack(self, _values: &[u32; GROUP], _width: u32, _out: &mut [u8]) -> usize {
        match self {}
    }

    /// Never called (no `Avx512` exists).
    pub fn run<R>(self, _f: impl FnOnce() -> R) -> R {
        match self {}
    }
}
