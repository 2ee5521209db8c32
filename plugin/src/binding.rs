//! Which libhdf5 the plugin talks to.
//!
//! A process may hold several copies of libhdf5 (netCDF4's and h5py's wheels each bundle
//! one), and an `hid_t` from one copy means nothing to another. The plugin therefore
//! keeps one binding per libhdf5 that uses it, each with its own filter class whose
//! callbacks run against that library:
//!
//! - Loaded through HDF5's plugin path, `H5PLget_plugin_info` is called by the libhdf5
//!   that loads the plugin: the return address of that call (glibc's `backtrace`, then
//!   `dladdr`) names the caller's object, and when that object itself defines HDF5's API
//!   the plugin binds to it and hands it a class of its own.
//! - Registered by hand (the Python package, like hdf5plugin's `init_filter`),
//!   [`init_filter`] names the library (libhdf5 itself or any object that depends on it,
//!   such as h5py's `h5z` extension module); the next `H5PLget_plugin_info` call that does
//!   not come from a libhdf5 returns that binding's class.
//! - Otherwise the first libhdf5 found in the process is used, as before.

use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::ffi::{H5ZClass2, Herr, Hid, Htri, H5Z_CLASS_T_VERS};
use crate::filter;
use crate::guard;
use crate::hdf5::{find_library, Hdf5, Library};
use crate::FILTER_ID;

/// How many distinct libhdf5 copies one process may use the plugin from.
pub const MAX_BINDINGS: usize = 8;
const NONE: usize = usize::MAX;

/// One libhdf5 the plugin is bound to.
struct Binding {
    /// Address of the library's `H5Pmodify_filter`: tells copies apart.
    key: usize,
    /// The `dlopen` handle (as an address) to resolve the entry points through.
    handle: usize,
    /// The entry points, resolved on first use: not while HDF5 is loading the plugin,
    /// since resolving calls into the library.
    api: OnceLock<Hdf5>,
}

impl Binding {
    fn api(&self) -> &Hdf5 {
        self.api
            .get_or_init(|| Hdf5::resolve(&Library(self.handle as *mut c_void)))
    }
}

static BINDINGS: [OnceLock<Binding>; MAX_BINDINGS] = [const { OnceLock::new() }; MAX_BINDINGS];
/// Serialises the creation of bindings.
static BIND_LOCK: Mutex<()> = Mutex::new(());
/// The binding used outside callbacks and for callers that are not a libhdf5.
static DEFAULT: AtomicUsize = AtomicUsize::new(NONE);

/// The HDF5 entry points of the library bound in `slot`, else of the default binding
/// (resolved on first use); `None` if resolving them panicked (a callback then fails
/// instead of unwinding into C).
fn api_of(slot: usize) -> Option<&'static Hdf5> {
    std::panic::catch_unwind(|| match BINDINGS.get(slot).and_then(OnceLock::get) {
        Some(binding) => binding.api(),
        None => default_binding(),
    })
    .ok()
}

fn default_binding() -> &'static Hdf5 {
    let slot = DEFAULT.load(Ordering::Acquire);
    if let Some(binding) = BINDINGS.get(slot).and_then(OnceLock::get) {
        return binding.api();
    }
    // Every slot taken by other libraries: fall back to the first.
    let slot = bind(find_library()).unwrap_or(0);
    let _ = DEFAULT.compare_exchange(NONE, slot, Ordering::AcqRel, Ordering::Acquire);
    BINDINGS[slot].get().expect("slot 0 is bound first").api()
}

/// The slot bound to `lib`, creating it if needed; `None` when every slot is taken.
fn bind(lib: Library) -> Option<usize> {
    let key = lib.symbol("H5Pmodify_filter") as usize;
    let _guard = BIND_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (slot, cell) in BINDINGS.iter().enumerate() {
        match cell.get() {
            Some(binding) if binding.key == key => return Some(slot),
            Some(_) => continue,
            None => {
                let _ = cell.set(Binding {
                    key,
                    handle: lib.0 as usize,
                    api: OnceLock::new(),
                });
                return Some(slot);
            }
        }
    }
    None
}

/// Binds the plugin to the libhdf5 that `path` is or depends on, and makes it the one
/// whose class `H5PLget_plugin_info` hands to callers that are not a libhdf5. Returns
/// 0, or -1 when `path` cannot be loaded, -2 when HDF5's API is not found through it,
/// -3 when too many libraries are bound already.
///
/// # Safety
/// `path` must be null or a NUL-terminated string.
pub unsafe fn init_filter(path: *const c_char) -> c_int {
    if path.is_null() {
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated path; dlopen only reads it. The
    // reference it takes is kept for the life of the process.
    let handle = unsafe { libc::dlopen(path, libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return -1;
    }
    let lib = Library(handle);
    if lib.symbol("H5Pmodify_filter").is_null() {
        return -2;
    }
    match bind(lib) {
        Some(slot) => {
            DEFAULT.store(slot, Ordering::Release);
            0
        }
        None => -3,
    }
}

/// The filter class for the libhdf5 calling `H5PLget_plugin_info`, or for the default
/// binding when the caller is not a libhdf5 (a `ctypes` call, say). Null when every
/// binding slot is taken.
#[inline(never)]
pub fn plugin_info() -> *const c_void {
    let slot = match caller::hdf5_caller().and_then(bind) {
        Some(slot) => {
            let _ = DEFAULT.compare_exchange(NONE, slot, Ordering::AcqRel, Ordering::Acquire);
            Some(slot)
        }
        None => {
            default_binding();
            Some(DEFAULT.load(Ordering::Acquire)).filter(|&s| s < MAX_BINDINGS)
        }
    };
    match slot {
        Some(slot) => &CLASSES[slot] as *const H5ZClass2 as *const c_void,
        None => {
            eprintln!("karoo: more than {MAX_BINDINGS} HDF5 libraries in one process");
            std::ptr::null()
        }
    }
}

/// Path of the libhdf5 the default binding uses, if it was found by name.
pub fn default_library_path() -> Option<String> {
    let _ = default_binding();
    let slot = DEFAULT.load(Ordering::Acquire);
    let key = BINDINGS.get(slot)?.get()?.key;
    caller::object_path(key as *const c_void)
}

unsafe extern "C" fn can_apply_in<const N: usize>(dcpl: Hid, type_id: Hid, space: Hid) -> Htri {
    let Some(api) = api_of(N) else { return -1 };
    // SAFETY: HDF5 calls this with the ids `can_apply` expects.
    let verdict = unsafe { filter::can_apply(api, dcpl, type_id, space) };
    if verdict > 0 {
        // A shuffle before karoo is legal but spoils it: say so, without failing.
        let _ = std::panic::catch_unwind(|| {
            let pipeline = api.filter_ids(dcpl).unwrap_or_default();
            if let Some(message) = guard::shuffle_warning(&pipeline, FILTER_ID) {
                guard::warn_once(&message);
            }
        });
    }
    verdict
}

unsafe extern "C" fn set_local_in<const N: usize>(dcpl: Hid, type_id: Hid, space: Hid) -> Herr {
    let Some(api) = api_of(N) else { return -1 };
    // SAFETY: HDF5 calls this with the ids `set_local` expects.
    unsafe { filter::set_local(api, dcpl, type_id, space) }
}

unsafe extern "C" fn filter_in<const N: usize>(
    flags: std::os::raw::c_uint,
    cd_nelmts: usize,
    cd_values: *const std::os::raw::c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    let Some(api) = api_of(N) else { return 0 };
    // SAFETY: HDF5 calls this with the buffers `filter` expects.
    unsafe { filter::filter(api, flags, cd_nelmts, cd_values, nbytes, buf_size, buf) }
}

const fn class<const N: usize>() -> H5ZClass2 {
    H5ZClass2 {
        version: H5Z_CLASS_T_VERS,
        id: FILTER_ID,
        encoder_present: 1,
        decoder_present: 1,
        name: c"karoo".as_ptr(),
        can_apply: Some(can_apply_in::<N>),
        set_local: Some(set_local_in::<N>),
        filter: Some(filter_in::<N>),
    }
}

/// One filter class per binding slot.
static CLASSES: [H5ZClass2; MAX_BINDINGS] = [
    class::<0>(),
    class::<1>(),
    class::<2>(),
    class::<3>(),
    class::<4>(),
    class::<5>(),
    class::<6>(),
    class::<7>(),
];

/// Finding the object that called into the plugin.
mod caller {
    use super::*;

    /// `dladdr` of `addr`: the containing object's path and base address.
    pub(super) fn object_of(addr: *const c_void) -> Option<(&'static CStr, usize)> {
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        // SAFETY: dladdr only inspects the address and fills `info`.
        let found = unsafe { libc::dladdr(addr, info.as_mut_ptr()) };
        if found == 0 {
            return None;
        }
        // SAFETY: dladdr succeeded and filled the record.
        let info = unsafe { info.assume_init() };
        if info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: dli_fname is the loader's NUL-terminated name of a loaded object,
        // valid while it stays loaded (libhdf5 is never unloaded while in use).
        let name = unsafe { CStr::from_ptr(info.dli_fname) };
        Some((name, info.dli_fbase as usize))
    }

    /// Path of the object holding `addr`.
    pub(super) fn object_path(addr: *const c_void) -> Option<String> {
        object_of(addr).map(|(name, _)| name.to_string_lossy().into_owned())
    }

    /// The libhdf5 that called into the plugin, when the nearest caller outside this
    /// library is an object defining HDF5's API.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[inline(never)]
    pub(super) fn hdf5_caller() -> Option<Library> {
        let mut frames = [std::ptr::null_mut::<c_void>(); 16];
        // SAFETY: `frames` has room for the 16 return addresses backtrace may write.
        let depth = unsafe { libc::backtrace(frames.as_mut_ptr(), frames.len() as c_int) };
        let (_, own_base) = object_of(hdf5_caller as *const c_void)?;
        let frame = frames[..depth.max(0) as usize]
            .iter()
            .map(|&addr| object_of(addr))
            .find(|object| object.is_some_and(|(_, base)| base != own_base))??;
        let (name, base) = frame;
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already loaded (the
        // caller's); the reference it takes is kept for the life of the process.
        let mut handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            // The main program (a statically linked HDF5) is not found by its path.
            // SAFETY: a null path asks for the main program's handle.
            handle = unsafe { libc::dlopen(std::ptr::null(), libc::RTLD_NOW) };
        }
        if handle.is_null() {
            return None;
        }
        let lib = Library(handle);
        let defines_api = object_of(lib.symbol("H5Pmodify_filter"))
            .is_some_and(|(_, symbol_base)| symbol_base == base);
        defines_api.then_some(lib)
    }

    /// Without glibc's `backtrace` the caller is not looked for.
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub(super) fn hdf5_caller() -> Option<Library> {
        None
    }
}
