//! The few HDF5 C types and constants the plugin needs, declared by hand so the plugin
//! never links against libhdf5 (layouts are stable from HDF5 1.10 to 2.0).

use std::os::raw::{c_char, c_int, c_uint, c_void};

/// HDF5 object identifier (64-bit since HDF5 1.10).
pub type Hid = i64;
/// HDF5 status return: negative on failure.
pub type Herr = c_int;
/// HDF5 tri-state return: positive true, zero false, negative failure.
pub type Htri = c_int;
/// HDF5 dimension size.
pub type Hsize = u64;

/// `H5PL_TYPE_FILTER`: the plugin kind reported to the plugin loader.
pub const H5PL_TYPE_FILTER: c_int = 0;
/// `H5Z_CLASS_T_VERS`: version of `H5Z_class2_t`.
pub const H5Z_CLASS_T_VERS: c_int = 1;
/// `H5Z_FLAG_OPTIONAL`: the filter may fail on a chunk, which is then stored as it is.
pub const H5Z_FLAG_OPTIONAL: c_uint = 0x0001;
/// `H5Z_FLAG_REVERSE`: the filter callback is asked to decode.
pub const H5Z_FLAG_REVERSE: c_uint = 0x0100;
/// `H5E_DEFAULT`: the thread's default error stack.
pub const H5E_DEFAULT: Hid = 0;

/// `H5T_class_t` values the plugin distinguishes.
pub mod type_class {
    use std::os::raw::c_int;
    /// Integer types.
    pub const INTEGER: c_int = 0;
    /// Floating-point types.
    pub const FLOAT: c_int = 1;
    /// Strings (fixed or variable length).
    pub const STRING: c_int = 3;
    /// Bit fields.
    pub const BITFIELD: c_int = 4;
    /// Compound (struct) types.
    pub const COMPOUND: c_int = 6;
    /// Enumerations.
    pub const ENUM: c_int = 8;
    /// Variable-length sequences.
    pub const VLEN: c_int = 9;
    /// Fixed-size arrays.
    pub const ARRAY: c_int = 10;
}

/// `H5Z_can_apply_func_t`.
pub type CanApplyFn = unsafe extern "C" fn(dcpl: Hid, type_id: Hid, space: Hid) -> Htri;
/// `H5Z_set_local_func_t`.
pub type SetLocalFn = unsafe extern "C" fn(dcpl: Hid, type_id: Hid, space: Hid) -> Herr;
/// `H5Z_func_t`.
pub type FilterFn = unsafe extern "C" fn(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize;

/// `H5Z_class2_t`: the filter's description handed to the plugin loader.
#[repr(C)]
pub struct H5ZClass2 {
    /// Always `H5Z_CLASS_T_VERS`.
    pub version: c_int,
    /// Filter id.
    pub id: c_int,
    /// Non-zero: the filter can encode.
    pub encoder_present: c_uint,
    /// Non-zero: the filter can decode.
    pub decoder_present: c_uint,
    /// NUL-terminated filter name.
    pub name: *const c_char,
    /// Called at dataset creation: may the filter be used?
    pub can_apply: Option<CanApplyFn>,
    /// Called at dataset creation: record dataset-specific parameters.
    pub set_local: Option<SetLocalFn>,
    /// The filter itself.
    pub filter: Option<FilterFn>,
}

// SAFETY: the struct is immutable after construction and only holds a pointer to a
// static string and function pointers, all valid for the life of the process.
unsafe impl Sync for H5ZClass2 {}
