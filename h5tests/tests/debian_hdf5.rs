//! The karoo plugin driven by the system's real HDF5 C library (Debian's 1.10 through
//! `hdf5-sys`): datasets are written with filter 52033, closed, reopened and read back
//! bit for bit; invalid cd_values must fail dataset creation cleanly, with karoo's
//! message on the HDF5 error stack.
//!
//! The plugin is the `libh5karoo.so` cargo builds for this crate's `h5karoo`
//! dev-dependency (so it is always as fresh as the sources), copied alone into a
//! private directory that is handed to HDF5's plugin search with `H5PLprepend`.
//!
//! The `#[ignore]`d tests reproduce known plugin bugs; run them with
//! `cargo test -p h5tests -- --ignored`.

use std::ffi::{c_void, CStr, CString};
use std::fs;
use std::os::raw::{c_char, c_int, c_uint};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, Once};

use hdf5_sys::h5::{herr_t, H5open};
use hdf5_sys::h5d::{
    H5Dclose, H5Dcreate2, H5Dget_chunk_info_by_coord, H5Dget_create_plist, H5Dget_storage_size,
    H5Dopen2, H5Dread, H5Dvlen_reclaim, H5Dwrite,
};
use hdf5_sys::h5e::{
    H5E_auto2_t, H5E_direction_t, H5E_error2_t, H5Eget_auto2, H5Eset_auto2, H5Ewalk2, H5E_DEFAULT,
};
use hdf5_sys::h5f::{H5Fclose, H5Fcreate, H5Fopen, H5F_ACC_RDONLY, H5F_ACC_TRUNC};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{
    H5Pclose, H5Pcreate, H5Pget_filter_by_id2, H5Pset_chunk, H5Pset_deflate, H5Pset_filter,
    H5Pset_fletcher32, H5Pset_shuffle, H5P_CLS_DATASET_CREATE, H5P_DEFAULT,
};
use hdf5_sys::h5pl::H5PLprepend;
use hdf5_sys::h5s::{H5Sclose, H5Screate_simple, H5S_ALL};
use hdf5_sys::h5t::{
    H5T_class_t, H5Tclose, H5Tcopy, H5Tcreate, H5Tinsert, H5Tset_size, H5Tvlen_create, H5T_C_S1,
    H5T_NATIVE_DOUBLE, H5T_NATIVE_FLOAT, H5T_NATIVE_INT16, H5T_NATIVE_INT32, H5T_VARIABLE,
};
use hdf5_sys::h5z::{
    H5Zfilter_avail, H5Zget_filter_info, H5Z_FILTER_CONFIG_DECODE_ENABLED,
    H5Z_FILTER_CONFIG_ENCODE_ENABLED, H5Z_FLAG_MANDATORY, H5Z_FLAG_OPTIONAL,
};

/// karoo's registered HDF5 filter id.
const KAROO: c_int = 52033;
/// File name of the plugin library.
const PLUGIN_FILE: &str = "libh5karoo.so";

// ---------------------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------------------

/// Serialises the tests' HDF5 use (a non-thread-safe libhdf5 build must not be entered
/// from two threads) and, on first use, opens HDF5 and points it at the plugin.
fn hdf5() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    static INIT: Once = Once::new();
    let guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    INIT.call_once(|| {
        let dir = plugin_dir();
        let dir = CString::new(dir.to_str().expect("UTF-8 target path")).expect("no NUL");
        // SAFETY: plain library calls; `dir` is a valid C string HDF5 copies.
        unsafe {
            check(H5open(), "H5open");
            check(H5PLprepend(dir.as_ptr()), "H5PLprepend");
        }
    });
    guard
}

/// A directory holding nothing but a copy of the freshest `libh5karoo.so`.
fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let profile = deps.parent().expect("target/<profile>");
    let built = find_plugin(deps).unwrap_or_else(build_plugin);
    let dir = profile.join("h5tests-plugin");
    fs::create_dir_all(&dir).expect("create the plugin directory");
    // Copy then rename, so a test process running concurrently never sees a torn file.
    let staging = dir.join(format!("{PLUGIN_FILE}.{}.tmp", std::process::id()));
    fs::copy(&built, &staging).expect("copy the plugin");
    fs::rename(&staging, dir.join(PLUGIN_FILE)).expect("install the plugin");
    dir
}

/// The workspace's `target` directory, as seen from this crate's manifest.
fn workspace_target() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target")
}

/// The first plugin build that exists: the dev-dependency's (same profile as this
/// test), then the workspace's release and debug builds.
fn find_plugin(deps: &Path) -> Option<PathBuf> {
    let target = workspace_target();
    [
        deps.join(PLUGIN_FILE),
        target.join("release").join(PLUGIN_FILE),
        target.join("debug").join(PLUGIN_FILE),
    ]
    .into_iter()
    .find(|path| path.is_file())
}

/// Builds the plugin with `cargo build --release -p h5karoo` and returns its path.
fn build_plugin() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "h5karoo"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build --release -p h5karoo failed");
    workspace_target().join("release").join(PLUGIN_FILE)
}

// ---------------------------------------------------------------------------------------
// HDF5 handles and errors
// ---------------------------------------------------------------------------------------

/// An open HDF5 identifier, closed with its matching close function on drop.
struct Id {
    id: hid_t,
    close: unsafe extern "C" fn(hid_t) -> herr_t,
}

impl Id {
    /// Wraps `id`, panicking with `what` if HDF5 returned an error.
    fn new(id: hid_t, close: unsafe extern "C" fn(hid_t) -> herr_t, what: &str) -> Id {
        assert!(id >= 0, "{what} failed: {:?}", error_stack());
        Id { id, close }
    }

    /// Closes the identifier now, panicking with `what` if HDF5 reports an error: a
    /// chunk the filter fails to compress only surfaces here, when the cache is flushed.
    fn close_checked(self, what: &str) {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: as in `drop`; `ManuallyDrop` keeps `drop` from closing it again.
        check(unsafe { (this.close)(this.id) }, what);
    }
}

impl Drop for Id {
    fn drop(&mut self) {
        // SAFETY: `id` is a valid identifier this handle owns, and `close` is the HDF5
        // function that closes identifiers of its kind.
        unsafe { (self.close)(self.id) };
    }
}

/// Panics with `what` and the HDF5 error stack if `status` reports a failure.
fn check(status: herr_t, what: &str) {
    assert!(status >= 0, "{what} failed: {:?}", error_stack());
}

/// The messages on the calling thread's HDF5 error stack, innermost first.
fn error_stack() -> Vec<String> {
    /// `H5E_walk2_t` callback: appends each record's description to `messages`.
    unsafe extern "C" fn collect(
        _n: c_uint,
        error: *const H5E_error2_t,
        messages: *mut c_void,
    ) -> herr_t {
        // SAFETY: HDF5 passes a valid error record; `messages` is the Vec handed to
        // H5Ewalk2 below, alive and exclusively ours during the walk.
        let (error, messages) = unsafe { (&*error, &mut *(messages as *mut Vec<String>)) };
        if !error.desc.is_null() {
            // SAFETY: a non-null `desc` is a NUL-terminated string owned by HDF5.
            let desc = unsafe { CStr::from_ptr(error.desc) };
            messages.push(desc.to_string_lossy().into_owned());
        }
        0
    }
    let mut messages: Vec<String> = Vec::new();
    // SAFETY: H5Ewalk2 does not clear the stack; the callback matches H5E_walk2_t and
    // `messages` outlives the call.
    unsafe {
        H5Ewalk2(
            H5E_DEFAULT,
            H5E_direction_t::H5E_WALK_UPWARD,
            Some(collect),
            &mut messages as *mut Vec<String> as *mut c_void,
        );
    }
    messages
}

/// Runs `body` with HDF5's automatic error printing turned off on this thread.
fn silenced<T>(body: impl FnOnce() -> T) -> T {
    let mut func: H5E_auto2_t = None;
    let mut data: *mut c_void = std::ptr::null_mut();
    // SAFETY: the out-pointers are live locals; the saved handler is restored as is.
    unsafe {
        check(
            H5Eget_auto2(H5E_DEFAULT, &mut func, &mut data),
            "H5Eget_auto2",
        );
        check(
            H5Eset_auto2(H5E_DEFAULT, None, std::ptr::null_mut()),
            "H5Eset_auto2",
        );
    }
    let result = body();
    // SAFETY: restores the handler saved above.
    unsafe { H5Eset_auto2(H5E_DEFAULT, func, data) };
    result
}

/// A NUL-terminated copy of `s` for HDF5.
fn c_string(s: &str) -> CString {
    CString::new(s).expect("no NUL in names")
}

// ---------------------------------------------------------------------------------------
// Element types and test data
// ---------------------------------------------------------------------------------------

/// The element types under test.
#[derive(Debug, Clone, Copy)]
enum Element {
    Float32,
    Float64,
    Int16,
    Int32,
    /// Compound `{r: f32, i: f32}`, h5py's complex64.
    Complex64,
}

impl Element {
    const ALL: [Element; 5] = [
        Element::Float32,
        Element::Float64,
        Element::Int16,
        Element::Int32,
        Element::Complex64,
    ];

    /// Size of one element in bytes.
    fn size(self) -> usize {
        match self {
            Element::Int16 => 2,
            Element::Float32 | Element::Int32 => 4,
            Element::Float64 | Element::Complex64 => 8,
        }
    }

    /// A fresh HDF5 datatype for the element (native byte order; used in memory and file).
    fn datatype(self) -> Id {
        let native = match self {
            Element::Float32 => *H5T_NATIVE_FLOAT,
            Element::Float64 => *H5T_NATIVE_DOUBLE,
            Element::Int16 => *H5T_NATIVE_INT16,
            Element::Int32 => *H5T_NATIVE_INT32,
            Element::Complex64 => return complex64_type(),
        };
        // SAFETY: copying a predefined type HDF5 initialised in H5open.
        Id::new(unsafe { H5Tcopy(native) }, H5Tclose, "H5Tcopy")
    }

    /// The element-layout part of the cd_values `set_local` appends (indices 6 to 9).
    fn layout_values(self) -> [u32; 4] {
        match self {
            Element::Float32 => [4, 2, 4, 1],
            Element::Float64 => [8, 2, 8, 1],
            Element::Int16 => [2, 1, 2, 1],
            Element::Int32 => [4, 1, 4, 1],
            Element::Complex64 => [8, 2, 4, 2],
        }
    }

    /// `cd_values[10]` of layout version 2: the element type byte the chunks record
    /// (little-endian: this test runs on little-endian machines) and the exact-size bit.
    fn type_value(self) -> u32 {
        let kind = match self {
            Element::Float32 | Element::Float64 => 4,
            Element::Int16 | Element::Int32 => 3,
            Element::Complex64 => 5,
        };
        kind | 1 << 8
    }

    /// `n` elements of a smooth noisy series as raw native bytes; with `specials`, some
    /// elements are replaced by edge values (NaN payloads, -0.0, infinities, denormals,
    /// integer extremes).
    fn data(self, n: usize, seed: u64, specials: bool) -> Vec<u8> {
        match self {
            Element::Float32 | Element::Complex64 => {
                let words = n * self.size() / 4;
                let mut v: Vec<u32> = smooth(words, seed)
                    .iter()
                    .map(|&x| (x as f32).to_bits())
                    .collect();
                if specials {
                    sprinkle(&mut v, &F32_SPECIALS);
                }
                v.iter().flat_map(|x| x.to_ne_bytes()).collect()
            }
            Element::Float64 => {
                let mut v: Vec<u64> = smooth(n, seed).iter().map(|x| x.to_bits()).collect();
                if specials {
                    sprinkle(&mut v, &F64_SPECIALS);
                }
                v.iter().flat_map(|x| x.to_ne_bytes()).collect()
            }
            Element::Int16 => {
                let mut v: Vec<i16> = smooth(n, seed)
                    .iter()
                    .map(|&x| (x * 100.0).round() as i16)
                    .collect();
                if specials {
                    sprinkle(&mut v, &[i16::MIN, i16::MAX, 0, -1]);
                }
                v.iter().flat_map(|x| x.to_ne_bytes()).collect()
            }
            Element::Int32 => {
                let mut v: Vec<i32> = smooth(n, seed)
                    .iter()
                    .map(|&x| (x * 100_000.0).round() as i32)
                    .collect();
                if specials {
                    sprinkle(&mut v, &[i32::MIN, i32::MAX, 0, -1]);
                }
                v.iter().flat_map(|x| x.to_ne_bytes()).collect()
            }
        }
    }
}

/// The compound `{r: f32 at 0, i: f32 at 4}` type h5py uses for complex64.
fn complex64_type() -> Id {
    // SAFETY: creating an 8-byte compound type and inserting two native floats that
    // fit inside it; the names are valid C strings.
    unsafe {
        let t = Id::new(
            H5Tcreate(H5T_class_t::H5T_COMPOUND, 8),
            H5Tclose,
            "H5Tcreate",
        );
        check(
            H5Tinsert(t.id, c"r".as_ptr(), 0, *H5T_NATIVE_FLOAT),
            "H5Tinsert r",
        );
        check(
            H5Tinsert(t.id, c"i".as_ptr(), 4, *H5T_NATIVE_FLOAT),
            "H5Tinsert i",
        );
        t
    }
}

/// Bit patterns of float32 edge values: NaNs with payloads (quiet and signalling, both
/// signs), ±0, ±inf, denormals, extremes.
const F32_SPECIALS: [u32; 12] = [
    0x7fc1_2345, // quiet NaN with payload
    0xff80_0001, // negative signalling NaN
    0x7fa0_0000, // signalling NaN
    0x8000_0000, // -0.0
    0x0000_0000, // +0.0
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
    0x0000_0001, // smallest denormal
    0x807f_ffff, // largest negative denormal
    0x0080_0000, // smallest normal
    0x7f7f_ffff, // largest finite
    0xff7f_ffff, // most negative finite
];

/// Bit patterns of float64 edge values, as for [`F32_SPECIALS`].
const F64_SPECIALS: [u64; 12] = [
    0x7ff8_dead_beef_0001,
    0xfff0_0000_0000_0001,
    0x7ff4_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0000,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x800f_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0xffef_ffff_ffff_ffff,
];

/// Overwrites elements of `values` with `specials`, spread over the whole array (and
/// always including the first and last element).
fn sprinkle<T: Copy>(values: &mut [T], specials: &[T]) {
    let n = values.len();
    if n == 0 {
        return;
    }
    values[0] = specials[0];
    values[n - 1] = specials[specials.len() - 1];
    for (k, &special) in specials.iter().enumerate() {
        values[(k * 7919 + 13) % n] = special;
    }
}

/// A slowly varying sine plus small deterministic noise (SplitMix64), amplitude ~100.
fn smooth(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    let mut noise = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    (0..n)
        .map(|i| {
            100.0 * (i as f64 * 0.002).sin() + 30.0 * (i as f64 * 0.0003).cos() + 0.01 * noise()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Datasets
// ---------------------------------------------------------------------------------------

/// A dataset shape and its chunk shape.
struct Shape {
    dims: &'static [u64],
    chunk: &'static [u64],
}

impl Shape {
    /// Number of elements in the dataset.
    fn len(&self) -> usize {
        self.dims.iter().product::<u64>() as usize
    }
}

/// Ranks 1 to 4, none a multiple of its chunk (partial edge chunks everywhere), plus a
/// tiny dataset of exactly one chunk.
const SHAPES: [Shape; 5] = [
    Shape {
        dims: &[1000],
        chunk: &[128],
    },
    Shape {
        dims: &[37, 53],
        chunk: &[10, 16],
    },
    Shape {
        dims: &[13, 9, 7],
        chunk: &[5, 4, 3],
    },
    Shape {
        dims: &[6, 5, 7, 9],
        chunk: &[4, 2, 3, 5],
    },
    Shape {
        dims: &[2, 3],
        chunk: &[2, 3],
    },
];

/// cd_values to try on a dataset of `rank`: none, explicit defaults with two threads
/// and time axis 1, and the previous-sample predictor with an explicit lag on the last
/// axis.
fn cd_value_sets(rank: usize) -> Vec<Vec<u32>> {
    let axis1 = 1.min(rank as u32 - 1);
    vec![
        vec![],
        vec![0, 0, 2, axis1],
        vec![0, 1, 1, rank as u32 - 1, 3],
        // Archive mode: default (context rANS), and its Huffman variant on one thread.
        vec![1],
        vec![1, 5 << 16, 1, axis1],
    ]
}

/// A dataset creation property list: chunked as `chunk`, karoo (mandatory) with
/// `cd_values` as its only filter.
fn karoo_dcpl(chunk: &[u64], cd_values: &[u32]) -> Id {
    let dcpl = new_dcpl(chunk);
    add_karoo(&dcpl, cd_values);
    dcpl
}

/// A dataset creation property list chunked as `chunk`, with no filter yet.
fn new_dcpl(chunk: &[u64]) -> Id {
    // SAFETY: H5open ran in `hdf5()`, so the class id is initialised; `chunk` is a live
    // slice of `chunk.len()` dimensions.
    unsafe {
        let dcpl = Id::new(H5Pcreate(*H5P_CLS_DATASET_CREATE), H5Pclose, "H5Pcreate");
        check(
            H5Pset_chunk(dcpl.id, chunk.len() as c_int, chunk.as_ptr()),
            "H5Pset_chunk",
        );
        dcpl
    }
}

/// Appends karoo with `cd_values` to the filter pipeline of `dcpl`.
fn add_karoo(dcpl: &Id, cd_values: &[u32]) {
    // SAFETY: `cd_values` is a live slice of `cd_values.len()` unsigned ints.
    let status = unsafe {
        H5Pset_filter(
            dcpl.id,
            KAROO,
            H5Z_FLAG_MANDATORY,
            cd_values.len(),
            cd_values.as_ptr(),
        )
    };
    check(status, "H5Pset_filter");
}

/// Creates an HDF5 file at `path`, truncating any existing one.
fn create_file(path: &Path) -> Id {
    let name = c_string(path.to_str().expect("UTF-8 temp path"));
    // SAFETY: `name` is a valid C string; default property lists.
    let id = unsafe { H5Fcreate(name.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT) };
    Id::new(id, H5Fclose, "H5Fcreate")
}

/// Opens the HDF5 file at `path` read-only.
fn open_file(path: &Path) -> Id {
    let name = c_string(path.to_str().expect("UTF-8 temp path"));
    // SAFETY: `name` is a valid C string; default access property list.
    let id = unsafe { H5Fopen(name.as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT) };
    Id::new(id, H5Fclose, "H5Fopen")
}

/// Creates dataset `name` of `element` and `dims` with `dcpl`; if HDF5 refuses, the
/// messages it left on the error stack.
fn try_create_dataset(
    file: &Id,
    name: &str,
    element: Element,
    dims: &[u64],
    dcpl: &Id,
) -> Result<Id, Vec<String>> {
    try_create_typed(file, name, &element.datatype(), dims, dcpl)
}

/// Creates dataset `name` of `datatype` and `dims` with `dcpl`; if HDF5 refuses, the
/// messages it left on the error stack.
fn try_create_typed(
    file: &Id,
    name: &str,
    datatype: &Id,
    dims: &[u64],
    dcpl: &Id,
) -> Result<Id, Vec<String>> {
    let name = c_string(name);
    // SAFETY: `dims` is a live slice of `dims.len()` dimensions; no maximum dims.
    let space = unsafe { H5Screate_simple(dims.len() as c_int, dims.as_ptr(), std::ptr::null()) };
    let space = Id::new(space, H5Sclose, "H5Screate_simple");
    // SAFETY: all ids are open and valid; `name` is a valid C string.
    let id = unsafe {
        H5Dcreate2(
            file.id,
            name.as_ptr(),
            datatype.id,
            space.id,
            H5P_DEFAULT,
            dcpl.id,
            H5P_DEFAULT,
        )
    };
    if id < 0 {
        // Read the stack now: the next HDF5 call (closing `space`) clears it.
        return Err(error_stack());
    }
    Ok(Id {
        id,
        close: H5Dclose,
    })
}

/// Creates dataset `name` like [`try_create_dataset`], panicking if HDF5 refuses.
fn create_dataset(file: &Id, name: &str, element: Element, dims: &[u64], dcpl: &Id) -> Id {
    try_create_dataset(file, name, element, dims, dcpl)
        .unwrap_or_else(|messages| panic!("H5Dcreate2 {name} failed: {messages:?}"))
}

/// Writes all of `data` (raw native bytes of `element`) into `dataset`.
fn write_all(dataset: &Id, element: Element, data: &[u8]) {
    let datatype = element.datatype();
    // SAFETY: `data` holds exactly the dataset's elements in the memory type passed.
    let status = unsafe {
        H5Dwrite(
            dataset.id,
            datatype.id,
            H5S_ALL,
            H5S_ALL,
            H5P_DEFAULT,
            data.as_ptr() as *const c_void,
        )
    };
    check(status, "H5Dwrite");
}

/// Opens dataset `name` in `file`.
fn open_dataset(file: &Id, name: &str) -> Id {
    let name = c_string(name);
    // SAFETY: `file` is open and `name` a valid C string.
    let id = unsafe { H5Dopen2(file.id, name.as_ptr(), H5P_DEFAULT) };
    Id::new(id, H5Dclose, "H5Dopen2")
}

/// Reads all `n` elements of `dataset` as raw native bytes of `element`.
fn read_all(dataset: &Id, element: Element, n: usize) -> Vec<u8> {
    let datatype = element.datatype();
    let mut bytes = vec![0u8; n * element.size()];
    // SAFETY: `bytes` has room for the dataset's `n` elements of the memory type.
    let status = unsafe {
        H5Dread(
            dataset.id,
            datatype.id,
            H5S_ALL,
            H5S_ALL,
            H5P_DEFAULT,
            bytes.as_mut_ptr() as *mut c_void,
        )
    };
    check(status, "H5Dread");
    bytes
}

/// Bytes the dataset's chunks occupy in the file.
fn storage_size(dataset: &Id) -> u64 {
    // SAFETY: `dataset` is an open dataset.
    unsafe { H5Dget_storage_size(dataset.id) }
}

/// karoo's flags, cd_values and filter name as recorded in `dataset`'s creation plist.
fn recorded_filter(dataset: &Id) -> (c_uint, Vec<u32>, String) {
    // SAFETY: `dataset` is an open dataset.
    let dcpl = unsafe { H5Dget_create_plist(dataset.id) };
    let dcpl = Id::new(dcpl, H5Pclose, "H5Dget_create_plist");
    let mut flags: c_uint = 0;
    let mut values = [0 as c_uint; 64];
    let mut count = values.len();
    let mut name = [0 as c_char; 64];
    let mut config: c_uint = 0;
    // SAFETY: every out-pointer refers to a live local; `count` and the name length
    // give HDF5 the capacities of `values` and `name`.
    let status = unsafe {
        H5Pget_filter_by_id2(
            dcpl.id,
            KAROO,
            &mut flags,
            &mut count,
            values.as_mut_ptr(),
            name.len(),
            name.as_mut_ptr(),
            &mut config,
        )
    };
    check(status, "H5Pget_filter_by_id2");
    assert!(count <= values.len(), "{count} cd_values recorded");
    // SAFETY: HDF5 NUL-terminates the name within the buffer it was given.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) };
    (
        flags,
        values[..count].to_vec(),
        name.to_string_lossy().into_owned(),
    )
}

/// What came back from a written, closed and reopened dataset.
struct ReadBack {
    bytes: Vec<u8>,
    storage: u64,
    cd_values: Vec<u32>,
}

/// Writes `data` as a karoo-compressed dataset of `element` and `shape` with `dcpl`
/// into a fresh file, closes it, reopens it and reads everything back.
fn write_and_reopen(element: Element, shape: &Shape, dcpl: &Id, data: &[u8]) -> ReadBack {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("karoo.h5");
    let file = create_file(&path);
    let dataset = create_dataset(&file, "data", element, shape.dims, dcpl);
    write_all(&dataset, element, data);
    dataset.close_checked("H5Dclose after writing");
    file.close_checked("H5Fclose after writing");
    let file = open_file(&path);
    let dataset = open_dataset(&file, "data");
    ReadBack {
        bytes: read_all(&dataset, element, shape.len()),
        storage: storage_size(&dataset),
        cd_values: recorded_filter(&dataset).1,
    }
}

/// Asserts `actual` equals `expected` byte for byte, naming the first differing element.
fn assert_same_bytes(actual: &[u8], expected: &[u8], element: Element, context: &str) {
    assert_eq!(actual.len(), expected.len(), "{context}: length differs");
    if let Some(at) = actual.iter().zip(expected).position(|(a, e)| a != e) {
        let index = at / element.size();
        let span = index * element.size()..(index + 1) * element.size();
        panic!(
            "{context}: element {index} differs: wrote {:02x?}, read {:02x?}",
            &expected[span.clone()],
            &actual[span]
        );
    }
}

/// Round-trips `element` data (with edge values) through every shape and cd_values set,
/// asserting bit-exact equality and the recorded cd_values.
fn assert_round_trips(element: Element) {
    let _hdf5 = hdf5();
    for (s, shape) in SHAPES.iter().enumerate() {
        for cd_values in cd_value_sets(shape.dims.len()) {
            let context = format!(
                "{element:?} dims {:?} chunk {:?} cd_values {cd_values:?}",
                shape.dims, shape.chunk
            );
            let data = element.data(shape.len(), s as u64 + 1, true);
            let back =
                write_and_reopen(element, shape, &karoo_dcpl(shape.chunk, &cd_values), &data);
            assert_same_bytes(&back.bytes, &data, element, &context);
            assert_eq!(
                back.cd_values,
                expected_cd_values(&cd_values, element, shape.chunk),
                "{context}"
            );
        }
    }
}

/// The full cd_values `set_local` should record for `user` values, `element` and `chunk`.
fn expected_cd_values(user: &[u32], element: Element, chunk: &[u64]) -> Vec<u32> {
    let mut values = [0u32; 5];
    values[..user.len()].copy_from_slice(user);
    let mut values = values.to_vec();
    values.push(2);
    values.extend(element.layout_values());
    values.push(element.type_value());
    values.push(chunk.len() as u32);
    values.extend(chunk.iter().map(|&d| d as u32));
    values
}

/// Asserts that creating a karoo dataset with `cd_values` fails and that HDF5 stays
/// usable afterwards; returns the messages HDF5 left on the error stack.
fn create_refused(cd_values: &[u32], dims: &'static [u64], chunk: &'static [u64]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = create_file(&dir.path().join("refused.h5"));
    let dcpl = karoo_dcpl(chunk, cd_values);
    let messages = silenced(|| try_create_dataset(&file, "data", Element::Float32, dims, &dcpl))
        .err()
        .unwrap_or_else(|| panic!("cd_values {cd_values:?} were accepted at dataset creation"));
    // HDF5 and the file are still usable after the refusal.
    let shape = Shape { dims, chunk };
    let good = create_dataset(
        &file,
        "good",
        Element::Float32,
        dims,
        &karoo_dcpl(chunk, &[]),
    );
    let data = Element::Float32.data(shape.len(), 7, false);
    write_all(&good, Element::Float32, &data);
    assert_same_bytes(
        &read_all(&good, Element::Float32, shape.len()),
        &data,
        Element::Float32,
        "dataset created after a refused one",
    );
    messages
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[test]
fn plugin_is_available_with_encoder_and_decoder() {
    let _hdf5 = hdf5();
    // SAFETY: plain queries; `config` is a live local.
    let (available, config) = unsafe {
        let available = H5Zfilter_avail(KAROO);
        let mut config: c_uint = 0;
        check(H5Zget_filter_info(KAROO, &mut config), "H5Zget_filter_info");
        (available, config)
    };
    assert!(available > 0, "HDF5 did not load filter {KAROO}");
    let both = H5Z_FILTER_CONFIG_ENCODE_ENABLED | H5Z_FILTER_CONFIG_DECODE_ENABLED;
    assert_eq!(config & both, both);
}

#[test]
fn float32_round_trips_bit_exact_ranks_1_to_4() {
    assert_round_trips(Element::Float32);
}

#[test]
fn float64_round_trips_bit_exact_ranks_1_to_4() {
    assert_round_trips(Element::Float64);
}

#[test]
fn int16_round_trips_bit_exact_ranks_1_to_4() {
    assert_round_trips(Element::Int16);
}

#[test]
fn int32_round_trips_bit_exact_ranks_1_to_4() {
    assert_round_trips(Element::Int32);
}

#[test]
fn complex64_compound_round_trips_bit_exact_ranks_1_to_4() {
    assert_round_trips(Element::Complex64);
}

#[test]
fn smooth_series_are_stored_smaller_than_raw() {
    let _hdf5 = hdf5();
    let shape = Shape {
        dims: &[8192, 6],
        chunk: &[1024, 6],
    };
    for element in Element::ALL {
        for cd_values in [vec![], vec![0, 0, 2, 0]] {
            let data = element.data(shape.len(), 42, false);
            let back =
                write_and_reopen(element, &shape, &karoo_dcpl(shape.chunk, &cd_values), &data);
            let context = format!("{element:?} cd_values {cd_values:?}");
            assert_same_bytes(&back.bytes, &data, element, &context);
            eprintln!(
                "{context}: {} bytes stored for {} raw",
                back.storage,
                data.len()
            );
            assert!(
                back.storage > 0 && back.storage < data.len() as u64,
                "{context}: stored {} bytes for {} raw",
                back.storage,
                data.len()
            );
        }
    }
}

/// A chunked dcpl for `chunk` whose pipeline `build` sets up.
fn pipeline_dcpl(chunk: &[u64], build: impl FnOnce(&Id)) -> Id {
    let dcpl = new_dcpl(chunk);
    build(&dcpl);
    dcpl
}

#[test]
fn karoo_between_shuffle_and_fletcher32_round_trips() {
    let _hdf5 = hdf5();
    let shape = &SHAPES[2];
    for element in Element::ALL {
        let data = element.data(shape.len(), 3, true);
        // karoo sees whole (shuffled) chunks and Fletcher-32 checksums its output.
        let dcpl = pipeline_dcpl(shape.chunk, |dcpl| {
            // SAFETY: plain property-list calls on an open dcpl.
            unsafe { check(H5Pset_shuffle(dcpl.id), "H5Pset_shuffle") };
            add_karoo(dcpl, &[0, 0, 2, 1]);
            // SAFETY: as above.
            unsafe { check(H5Pset_fletcher32(dcpl.id), "H5Pset_fletcher32") };
        });
        let back = write_and_reopen(element, shape, &dcpl, &data);
        assert_same_bytes(&back.bytes, &data, element, "shuffle, karoo, fletcher32");
    }
}

/// A deflate-then-karoo dcpl: karoo sees deflate's output, a buffer whose size is not
/// the chunk's, which it codes as a flat series of bytes.
fn deflate_then_karoo(chunk: &[u64]) -> Id {
    pipeline_dcpl(chunk, |dcpl| {
        // SAFETY: plain property-list call on an open dcpl.
        unsafe { check(H5Pset_deflate(dcpl.id, 1), "H5Pset_deflate") };
        add_karoo(dcpl, &[]);
    })
}

#[test]
fn karoo_after_deflate_round_trips_compressible_chunks() {
    let _hdf5 = hdf5();
    let shape = Shape {
        dims: &[4000],
        chunk: &[1000],
    };
    // A slow integer ramp: deflate shrinks every chunk.
    let data: Vec<u8> = (0..4000i32).flat_map(|i| (i / 16).to_ne_bytes()).collect();
    let back = write_and_reopen(
        Element::Int32,
        &shape,
        &deflate_then_karoo(shape.chunk),
        &data,
    );
    assert_same_bytes(&back.bytes, &data, Element::Int32, "deflate, karoo");
}

#[test]
fn karoo_after_deflate_round_trips_incompressible_chunks() {
    let _hdf5 = hdf5();
    // Small noisy chunks (60 floats): deflate's output is larger than its input.
    let shape = &SHAPES[2];
    let data = Element::Float32.data(shape.len(), 3, true);
    let back = write_and_reopen(
        Element::Float32,
        shape,
        &deflate_then_karoo(shape.chunk),
        &data,
    );
    assert_same_bytes(&back.bytes, &data, Element::Float32, "deflate, karoo");
}

#[test]
fn karoo_after_fletcher32_round_trips() {
    let _hdf5 = hdf5();
    let shape = &SHAPES[2];
    let data = Element::Float32.data(shape.len(), 3, true);
    let dcpl = pipeline_dcpl(shape.chunk, |dcpl| {
        // SAFETY: plain property-list call on an open dcpl.
        unsafe { check(H5Pset_fletcher32(dcpl.id), "H5Pset_fletcher32") };
        add_karoo(dcpl, &[]);
    });
    let back = write_and_reopen(Element::Float32, shape, &dcpl, &data);
    assert_same_bytes(&back.bytes, &data, Element::Float32, "fletcher32, karoo");
}

#[test]
fn archive_mode_stores_less_than_fast_mode() {
    let _hdf5 = hdf5();
    let shape = &SHAPES[2];
    let data = Element::Float32.data(shape.len(), 3, false);
    let fast = write_and_reopen(
        Element::Float32,
        shape,
        &karoo_dcpl(shape.chunk, &[0]),
        &data,
    );
    let archive = write_and_reopen(
        Element::Float32,
        shape,
        &karoo_dcpl(shape.chunk, &[1]),
        &data,
    );
    assert_same_bytes(&archive.bytes, &data, Element::Float32, "archive");
    assert!(
        archive.storage < fast.storage,
        "archive {} bytes, fast {} bytes",
        archive.storage,
        fast.storage
    );
}

#[test]
fn invalid_cd_values_are_rejected_with_karoo_messages() {
    let _hdf5 = hdf5();
    let cases: [(&[u32], &str); 5] = [
        (&[7], "unknown mode 7"),
        (&[0, 99], "unknown predictor 99"),
        (&[0, 0, 5000], "5000 threads"),
        (&[0, 0, 0, 2], "time axis 2"),
        (&[0, 0, 0, 1, 5], "lag 5"),
    ];
    for (cd_values, expected) in cases {
        let messages = create_refused(cd_values, &[100, 4], &[10, 4]);
        assert!(
            messages.iter().any(|m| m.contains(expected)),
            "cd_values {cd_values:?}: no {expected:?} on the error stack: {messages:?}"
        );
    }
}

#[test]
fn set_local_records_the_full_cd_values() {
    let _hdf5 = hdf5();
    let cases: [(Element, &[u32], Shape, &[u32]); 4] = [
        (
            Element::Float32,
            &[],
            Shape {
                dims: &[25, 4, 7],
                chunk: &[10, 4, 3],
            },
            &[0, 0, 0, 0, 0, 2, 4, 2, 4, 1, 260, 3, 10, 4, 3],
        ),
        (
            Element::Complex64,
            &[0, 1, 2, 1],
            Shape {
                dims: &[20, 20],
                chunk: &[8, 6],
            },
            &[0, 1, 2, 1, 0, 2, 8, 2, 4, 2, 261, 2, 8, 6],
        ),
        (
            Element::Int16,
            &[0, 0, 0, 0, 4],
            Shape {
                dims: &[100],
                chunk: &[16],
            },
            &[0, 0, 0, 0, 4, 2, 2, 1, 2, 1, 259, 1, 16],
        ),
        (
            Element::Float64,
            &[0, 0, 3],
            Shape {
                dims: &[5, 5],
                chunk: &[5, 5],
            },
            &[0, 0, 3, 0, 0, 2, 8, 2, 8, 1, 260, 2, 5, 5],
        ),
    ];
    for (element, user, shape, expected) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("values.h5");
        {
            let file = create_file(&path);
            let dcpl = karoo_dcpl(shape.chunk, user);
            let dataset = create_dataset(&file, "data", element, shape.dims, &dcpl);
            let (flags, values, name) = recorded_filter(&dataset);
            assert_eq!(values, expected, "{element:?} {user:?} at creation");
            assert_eq!((flags, name.as_str()), (H5Z_FLAG_MANDATORY, "karoo"));
            write_all(&dataset, element, &element.data(shape.len(), 5, true));
            dataset.close_checked("H5Dclose");
        }
        let file = open_file(&path);
        let (_, values, _) = recorded_filter(&open_dataset(&file, "data"));
        assert_eq!(values, expected, "{element:?} {user:?} after reopening");
    }
}

// ---------------------------------------------------------------------------------------
// Variable-length data and copied cd_values
// ---------------------------------------------------------------------------------------

/// A variable-length C string datatype.
fn vlen_string_type() -> Id {
    // SAFETY: copying a predefined type HDF5 initialised in H5open, then resizing the copy.
    unsafe {
        let t = Id::new(H5Tcopy(*H5T_C_S1), H5Tclose, "H5Tcopy");
        check(H5Tset_size(t.id, H5T_VARIABLE), "H5Tset_size");
        t
    }
}

/// A dataset creation property list chunked as `chunk` with karoo added with `flags`.
fn karoo_dcpl_flags(chunk: &[u64], cd_values: &[u32], flags: c_uint) -> Id {
    let dcpl = new_dcpl(chunk);
    // SAFETY: `cd_values` is a live slice of `cd_values.len()` unsigned ints.
    let status =
        unsafe { H5Pset_filter(dcpl.id, KAROO, flags, cd_values.len(), cd_values.as_ptr()) };
    check(status, "H5Pset_filter");
    dcpl
}

/// The filter mask of the chunk at `offset`.
fn chunk_filter_mask(dataset: &Id, offset: &[u64]) -> c_uint {
    let (mut mask, mut addr, mut size) = (0, 0, 0);
    // SAFETY: `offset` has the dataset's rank; the out-pointers are live locals.
    let status = unsafe {
        H5Dget_chunk_info_by_coord(dataset.id, offset.as_ptr(), &mut mask, &mut addr, &mut size)
    };
    check(status, "H5Dget_chunk_info_by_coord");
    mask
}

#[test]
fn variable_length_strings_pass_through_an_optional_karoo() {
    let _hdf5 = hdf5();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("strings.h5");
    let strings: Vec<CString> = (0..30)
        .map(|i| c_string(&"visibility ".repeat(i % 4 + 1)))
        .collect();
    let pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
    let datatype = vlen_string_type();
    {
        let file = create_file(&path);
        let dcpl = karoo_dcpl_flags(&[8], &[1, 0, 2], H5Z_FLAG_OPTIONAL);
        let dataset = try_create_typed(&file, "s", &datatype, &[30], &dcpl)
            .unwrap_or_else(|messages| panic!("H5Dcreate2 failed: {messages:?}"));
        // SAFETY: `pointers` holds the dataset's 30 elements of the memory type.
        let status = unsafe {
            H5Dwrite(
                dataset.id,
                datatype.id,
                H5S_ALL,
                H5S_ALL,
                H5P_DEFAULT,
                pointers.as_ptr() as *const c_void,
            )
        };
        check(status, "H5Dwrite");
        dataset.close_checked("H5Dclose");
    }
    let file = open_file(&path);
    let dataset = open_dataset(&file, "s");
    let (flags, values, _) = recorded_filter(&dataset);
    assert_eq!((flags, values), (H5Z_FLAG_OPTIONAL, vec![1, 0, 2]));
    for chunk in [0, 8, 16, 24] {
        assert_eq!(chunk_filter_mask(&dataset, &[chunk]), 1, "chunk at {chunk}");
    }
    let mut read: Vec<*mut c_char> = vec![std::ptr::null_mut(); 30];
    // SAFETY: `read` has room for the dataset's 30 string pointers, which HDF5 allocates
    // and the reclaim below frees.
    unsafe {
        check(
            H5Dread(
                dataset.id,
                datatype.id,
                H5S_ALL,
                H5S_ALL,
                H5P_DEFAULT,
                read.as_mut_ptr() as *mut c_void,
            ),
            "H5Dread",
        );
        let back: Vec<CString> = read.iter().map(|&p| CStr::from_ptr(p).to_owned()).collect();
        let space = Id::new(
            H5Screate_simple(1, [30].as_ptr(), std::ptr::null()),
            H5Sclose,
            "H5Screate_simple",
        );
        check(
            H5Dvlen_reclaim(
                datatype.id,
                space.id,
                H5P_DEFAULT,
                read.as_mut_ptr() as *mut c_void,
            ),
            "H5Dvlen_reclaim",
        );
        assert_eq!(back, strings);
    }
}

#[test]
fn mandatory_karoo_on_variable_length_data_is_refused() {
    let _hdf5 = hdf5();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = create_file(&dir.path().join("refused.h5"));
    // SAFETY: creating a sequence type of a predefined base type.
    let sequence = Id::new(
        unsafe { H5Tvlen_create(*H5T_NATIVE_FLOAT) },
        H5Tclose,
        "H5Tvlen_create",
    );
    for (name, datatype) in [("strings", vlen_string_type()), ("sequences", sequence)] {
        let dcpl = karoo_dcpl(&[8], &[]);
        let messages = silenced(|| try_create_typed(&file, name, &datatype, &[30], &dcpl))
            .err()
            .unwrap_or_else(|| panic!("mandatory karoo accepted variable-length {name}"));
        // HDF5 1.10.8 and later refuse it before asking karoo; older ones ask can_apply.
        assert!(
            messages
                .iter()
                .any(|m| m == "not suitable for filters" || m == h5karoo::VARIABLE_LENGTH_REFUSAL),
            "{name}: {messages:?}"
        );
    }
}

#[test]
fn cd_values_beyond_the_five_user_values_are_refused() {
    let _hdf5 = hdf5();
    for cd_values in [&[0, 0, 0, 0, 0, 1, 99, 7][..], &[0; 6]] {
        let messages = create_refused(cd_values, &[100, 4], &[10, 4]);
        let expected = format!(
            "karoo: {} cd_values given; users set at most the first 5 (mode, coding, threads, \
             time axis, lag), karoo appends the others itself",
            cd_values.len()
        );
        assert!(messages.contains(&expected), "{cd_values:?}: {messages:?}");
    }
}

#[test]
fn a_copied_property_list_is_derived_again_for_the_new_dataset() {
    let _hdf5 = hdf5();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = create_file(&dir.path().join("copied.h5"));
    let first = create_dataset(
        &file,
        "first",
        Element::Complex64,
        &[20, 20],
        &karoo_dcpl(&[8, 6], &[1, 0, 2, 1]),
    );
    let full = recorded_filter(&first).1;
    assert_eq!(full, [1, 0, 2, 1, 0, 2, 8, 2, 4, 2, 261, 2, 8, 6]);
    // SAFETY: `first` is open; the copy is ours to change and close.
    let dcpl = Id::new(
        unsafe { H5Dget_create_plist(first.id) },
        H5Pclose,
        "H5Dget_create_plist",
    );
    // SAFETY: a live slice of two dimensions.
    check(
        unsafe { H5Pset_chunk(dcpl.id, 2, [5, 20].as_ptr()) },
        "H5Pset_chunk",
    );
    let shape = Shape {
        dims: &[12, 40],
        chunk: &[5, 20],
    };
    let back = write_and_reopen(
        Element::Int16,
        &shape,
        &dcpl,
        &Element::Int16.data(shape.len(), 3, true),
    );
    assert_eq!(
        back.cd_values,
        [1, 0, 2, 1, 0, 2, 2, 1, 2, 1, 259, 2, 5, 20]
    );
    assert_same_bytes(
        &back.bytes,
        &Element::Int16.data(shape.len(), 3, true),
        Element::Int16,
        "copied property list",
    );
}

// ---------------------------------------------------------------------------------------
// Golden files: datasets written by released karoo plugins
// ---------------------------------------------------------------------------------------

/// The datasets every golden file holds, each beside an unfiltered `<name>_expected`
/// twin (written by h5tests/golden/make_golden_files.py; h5tests/python/test_golden.py
/// reads the same files through h5py).
const GOLDEN_DATASETS: [&str; 11] = [
    "complex64_fast_edges",
    "complex128_archive",
    "int32_compound_fast",
    "float32_bigendian",
    "float32_archive_edges",
    "float32_specials",
    "float64_options",
    "int16_time_axis1",
    "float32_scaled_spectra_archive",
    "float32_lag_archive",
    "float32_one_row_fast",
];

/// All of `dataset`'s elements as the bytes of its own file datatype (no conversion:
/// big-endian and compound elements come back as stored).
fn read_as_stored(dataset: &Id) -> Vec<u8> {
    use hdf5_sys::h5d::{H5Dget_space, H5Dget_type};
    use hdf5_sys::h5s::H5Sget_simple_extent_npoints;
    use hdf5_sys::h5t::H5Tget_size;
    // SAFETY: `dataset` is open; the type and space ids are closed by their guards.
    let (datatype, space) = unsafe {
        (
            Id::new(H5Dget_type(dataset.id), H5Tclose, "H5Dget_type"),
            Id::new(H5Dget_space(dataset.id), H5Sclose, "H5Dget_space"),
        )
    };
    // SAFETY: open ids.
    let (size, points) = unsafe {
        (
            H5Tget_size(datatype.id),
            H5Sget_simple_extent_npoints(space.id),
        )
    };
    let mut bytes = vec![0u8; size * usize::try_from(points).expect("extent")];
    // SAFETY: `bytes` has room for every element in the file's own datatype.
    let status = unsafe {
        H5Dread(
            dataset.id,
            datatype.id,
            H5S_ALL,
            H5S_ALL,
            H5P_DEFAULT,
            bytes.as_mut_ptr() as *mut c_void,
        )
    };
    check(status, "H5Dread");
    bytes
}

#[test]
fn golden_files_decode_to_their_expected_twins() {
    let _lock = hdf5();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/hdf5");
    for file_name in ["karoo-v1-h5py.h5", "karoo-v1-h5repack.h5"] {
        let file = open_file(&golden.join(file_name));
        for name in GOLDEN_DATASETS {
            let dataset = open_dataset(&file, name);
            assert_eq!(recorded_filter(&dataset).2, "karoo", "{file_name}:{name}");
            let expected = read_as_stored(&open_dataset(&file, &format!("{name}_expected")));
            let got = read_as_stored(&dataset);
            assert!(!got.is_empty(), "{file_name}:{name}");
            assert!(got == expected, "{file_name}:{name} decodes differently");
        }
    }
}
