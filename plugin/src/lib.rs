//! `libh5karoo.so`: the karoo HDF5 dynamically loaded filter plugin (filter id 52033).
//!
//! HDF5 glue only: the codec lives in the `karoo` crate. Put the library's directory in
//! `HDF5_PLUGIN_PATH` and create datasets with filter id 52033; see `cd_values` for the
//! parameters.

pub mod cd_values;
mod ffi;
mod filter;
mod hdf5;

pub use filter::VARIABLE_LENGTH_REFUSAL;

use std::ffi::c_void;
use std::os::raw::c_int;

use ffi::{H5ZClass2, H5PL_TYPE_FILTER, H5Z_CLASS_T_VERS};

/// karoo's HDF5 filter id (private-use range, 32000 and above).
pub const FILTER_ID: c_int = 52033;

static KAROO_CLASS: H5ZClass2 = H5ZClass2 {
    version: H5Z_CLASS_T_VERS,
    id: FILTER_ID,
    encoder_present: 1,
    decoder_present: 1,
    name: c"karoo".as_ptr(),
    can_apply: Some(filter::can_apply),
    set_local: Some(filter::set_local),
    filter: Some(filter::filter),
};

/// Tells HDF5's plugin loader this library holds a filter.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_type() -> c_int {
    H5PL_TYPE_FILTER
}

/// Hands HDF5's plugin loader the filter's class description.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_info() -> *const c_void {
    &KAROO_CLASS as *const H5ZClass2 as *const c_void
}
