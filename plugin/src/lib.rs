//! `libh5karoo.so`: the karoo HDF5 dynamically loaded filter plugin (filter id 52033).
//!
//! HDF5 glue only: the codec lives in the `karoo` crate. Put the library's directory in
//! `HDF5_PLUGIN_PATH` and create datasets with filter id 52033; see `cd_values` for the
//! parameters. Or register it by hand: `karoo_init_filter(path of libhdf5)`, then
//! `H5Zregister(H5PLget_plugin_info())` (what the Python package does). `capi` is a
//! small C ABI over the codec for callers outside HDF5.

mod binding;
pub mod capi;
pub mod cd_values;
mod ffi;
mod filter;
mod guard;
mod hdf5;
mod panics;

pub use filter::VARIABLE_LENGTH_REFUSAL;

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};

use ffi::H5PL_TYPE_FILTER;

/// karoo's HDF5 filter id (private-use range, 32000 and above).
pub const FILTER_ID: c_int = 52033;

/// karoo's HDF5 filter id, for callers that register the filter by hand (the Python
/// package reads it here instead of repeating it).
#[no_mangle]
pub extern "C" fn karoo_filter_id() -> c_int {
    FILTER_ID
}

/// Tells HDF5's plugin loader this library holds a filter.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_type() -> c_int {
    H5PL_TYPE_FILTER
}

/// Hands HDF5's plugin loader the filter's class description, bound to the libhdf5
/// that calls (or, called from elsewhere, to the one `karoo_init_filter` named).
#[no_mangle]
#[inline(never)]
pub extern "C" fn H5PLget_plugin_info() -> *const c_void {
    binding::plugin_info()
}

/// Binds the filter to the libhdf5 at `libhdf5_path`, or to the one that library (an
/// extension module, say) depends on, as hdf5plugin's `init_filter` does: call before
/// registering the class from `H5PLget_plugin_info` with `H5Zregister`. Returns 0, or a
/// negative value when the library cannot be loaded (-1), has no HDF5 API (-2), or
/// too many HDF5 libraries are bound already (-3).
///
/// # Safety
/// `libhdf5_path` must be null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn karoo_init_filter(libhdf5_path: *const c_char) -> c_int {
    // SAFETY: as the caller promises.
    unsafe { binding::init_filter(libhdf5_path) }
}

/// Writes the path of the libhdf5 the filter uses outside callbacks into `out`
/// (`out_len` bytes, NUL-terminated, truncated to fit); returns the path's full length,
/// or -1 when it is not known.
///
/// # Safety
/// `out` must be null or point at `out_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn karoo_hdf5_path(out: *mut c_char, out_len: usize) -> c_int {
    let Some(path) = std::panic::catch_unwind(binding::default_library_path)
        .ok()
        .flatten()
    else {
        return -1;
    };
    if !out.is_null() && out_len > 0 {
        let n = path.len().min(out_len - 1);
        // SAFETY: `out` has `out_len` writable bytes and `n + 1 <= out_len`.
        unsafe {
            std::ptr::copy_nonoverlapping(path.as_ptr(), out.cast::<u8>(), n);
            *out.add(n) = 0;
        }
    }
    c_int::try_from(path.len()).unwrap_or(c_int::MAX)
}
