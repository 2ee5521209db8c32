//! HDF5 functions resolved at run time from a libhdf5 already loaded in the process.
//!
//! The plugin has no link-time dependency on libhdf5: the same `.so` serves Debian's
//! HDF5 1.10 tools and h5py's privately loaded HDF5 2.0. Which library is used is
//! `binding`'s choice (the one that loaded the plugin, or the one named by
//! `karoo_init_filter`); when neither is known, the loaded objects are walked with
//! `dl_iterate_phdr`, the first libhdf5 found that exports the needed functions is used,
//! and the process-wide symbol scope is the fallback (static builds).

use std::ffi::{c_void, CStr, CString};
use std::mem::MaybeUninit;
use std::os::raw::{c_char, c_int, c_uint};

use crate::ffi::{Herr, Hid, Hsize, H5E_DEFAULT};

type EpushFn = unsafe extern "C" fn(
    Hid,
    *const c_char,
    *const c_char,
    c_uint,
    Hid,
    Hid,
    Hid,
    *const c_char,
    ...
) -> Herr;
type GetChunkFn = unsafe extern "C" fn(Hid, c_int, *mut Hsize) -> c_int;
type GetFilterFn = unsafe extern "C" fn(
    Hid,
    c_int,
    *mut c_uint,
    *mut usize,
    *mut c_uint,
    usize,
    *mut c_char,
    *mut c_uint,
) -> Herr;
type NFiltersFn = unsafe extern "C" fn(Hid) -> c_int;
type GetFilter2Fn = unsafe extern "C" fn(
    Hid,
    c_uint,
    *mut c_uint,
    *mut usize,
    *mut c_uint,
    usize,
    *mut c_char,
    *mut c_uint,
) -> c_int;
type ModifyFilterFn = unsafe extern "C" fn(Hid, c_int, c_uint, usize, *const c_uint) -> Herr;
type TypeIntFn = unsafe extern "C" fn(Hid) -> c_int;
type TypeSizeFn = unsafe extern "C" fn(Hid) -> usize;
type TypeIdFn = unsafe extern "C" fn(Hid) -> Hid;
type MemberIdFn = unsafe extern "C" fn(Hid, c_uint) -> Hid;
type MemberSizeFn = unsafe extern "C" fn(Hid, c_uint) -> usize;
type CloseFn = unsafe extern "C" fn(Hid) -> Herr;
type VersionFn = unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_uint) -> Herr;
type AllocateFn = unsafe extern "C" fn(usize, bool) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> Herr;

/// Which HDF5 minor error code a pushed error carries.
#[derive(Debug, Clone, Copy)]
pub enum Minor {
    /// Error in the `can_apply` callback.
    CanApply,
    /// Error in the `set_local` callback.
    SetLocal,
    /// Error in the filter function.
    Callback,
}

/// The resolved HDF5 entry points.
pub struct Hdf5 {
    version: Option<(u32, u32, u32)>,
    epush: Option<EpushFn>,
    err_class: Option<*const Hid>,
    major_pline: Option<*const Hid>,
    minor_can_apply: Option<*const Hid>,
    minor_set_local: Option<*const Hid>,
    minor_callback: Option<*const Hid>,
    get_chunk: Option<GetChunkFn>,
    get_filter: Option<GetFilterFn>,
    nfilters: Option<NFiltersFn>,
    get_filter2: Option<GetFilter2Fn>,
    modify_filter: Option<ModifyFilterFn>,
    type_class: Option<TypeIntFn>,
    type_size: Option<TypeSizeFn>,
    type_nmembers: Option<TypeIntFn>,
    type_member: Option<MemberIdFn>,
    type_member_offset: Option<MemberSizeFn>,
    type_super: Option<TypeIdFn>,
    type_is_variable_str: Option<TypeIntFn>,
    type_sign: Option<TypeIntFn>,
    type_order: Option<TypeIntFn>,
    type_close: Option<CloseFn>,
    allocate: Option<AllocateFn>,
    free: Option<FreeFn>,
}

// SAFETY: the struct holds function pointers and addresses of HDF5's global error-id
// variables; both stay valid while the library is loaded and are safe to share.
unsafe impl Send for Hdf5 {}
// SAFETY: as above; nothing in it is mutated after resolution.
unsafe impl Sync for Hdf5 {}

/// A handle to look symbols up in (a `dlopen` handle, or `RTLD_DEFAULT`).
pub struct Library(pub *mut c_void);

impl Library {
    /// The address of `name` in the library or its dependencies, or null.
    pub fn symbol(&self, name: &str) -> *mut c_void {
        let name = CString::new(name).expect("symbol names have no NUL");
        // SAFETY: the handle is a valid dlopen handle (or RTLD_DEFAULT) and the name a
        // valid C string; dlsym only reads them.
        unsafe { libc::dlsym(self.0, name.as_ptr()) }
    }
}

/// Resolves `name` in `lib` as a function pointer of type `F`, or `None`.
macro_rules! function {
    ($lib:expr, $name:literal, $ty:ty) => {{
        let ptr = $lib.symbol($name);
        if ptr.is_null() {
            None
        } else {
            // SAFETY: the symbol is HDF5's exported function of this name, whose C
            // signature is the one `$ty` declares (unchanged from HDF5 1.10 to 2.0).
            Some(unsafe { std::mem::transmute::<*mut c_void, $ty>(ptr) })
        }
    }};
}

/// Resolves `name` in `lib` as the address of a global `hid_t`, or `None`.
fn global(lib: &Library, name: &str) -> Option<*const Hid> {
    let ptr = lib.symbol(name);
    (!ptr.is_null()).then_some(ptr as *const Hid)
}

/// Paths of the loaded objects that look like the core HDF5 library.
fn loaded_hdf5_paths() -> Vec<CString> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info record and our `data` pointer,
        // which points at the Vec below for the duration of the walk.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut Vec<CString>)) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
        let path = unsafe { CStr::from_ptr(info.dlpi_name) };
        let file = path
            .to_bytes()
            .rsplit(|&b| b == b'/')
            .next()
            .unwrap_or_default();
        let file = String::from_utf8_lossy(file);
        let is_core = file.starts_with("libhdf5")
            && !["_hl", "cpp", "fortran", "java"]
                .iter()
                .any(|part| file.contains(part));
        if is_core {
            found.push(path.to_owned());
        }
        0
    }
    let mut found: Vec<CString> = Vec::new();
    // SAFETY: the callback only reads the records it is given and pushes into `found`.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut Vec<CString> as *mut c_void) };
    found
}

/// The first libhdf5 loaded in the process, else the process-wide symbol scope.
pub fn find_library() -> Library {
    for path in loaded_hdf5_paths() {
        // SAFETY: RTLD_NOLOAD only returns a handle to an object already loaded; the
        // reference it takes is kept for the life of the process.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if !handle.is_null() {
            let lib = Library(handle);
            if !lib.symbol("H5Pmodify_filter").is_null() {
                return lib;
            }
        }
    }
    Library(libc::RTLD_DEFAULT)
}

impl Hdf5 {
    /// HDF5's entry points as found through `lib`.
    pub fn resolve(lib: &Library) -> Hdf5 {
        let get_version = function!(lib, "H5get_libversion", VersionFn);
        let version = get_version.and_then(|get| {
            let (mut major, mut minor, mut release) = (0, 0, 0);
            // SAFETY: the three out-pointers refer to live locals.
            let status = unsafe { get(&mut major, &mut minor, &mut release) };
            (status >= 0).then_some((major, minor, release))
        });
        Hdf5 {
            version,
            epush: function!(lib, "H5Epush2", EpushFn),
            err_class: global(lib, "H5E_ERR_CLS_g"),
            major_pline: global(lib, "H5E_PLINE_g"),
            minor_can_apply: global(lib, "H5E_CANAPPLY_g"),
            minor_set_local: global(lib, "H5E_SETLOCAL_g"),
            minor_callback: global(lib, "H5E_CALLBACK_g"),
            get_chunk: function!(lib, "H5Pget_chunk", GetChunkFn),
            get_filter: function!(lib, "H5Pget_filter_by_id2", GetFilterFn),
            nfilters: function!(lib, "H5Pget_nfilters", NFiltersFn),
            get_filter2: function!(lib, "H5Pget_filter2", GetFilter2Fn),
            modify_filter: function!(lib, "H5Pmodify_filter", ModifyFilterFn),
            type_class: function!(lib, "H5Tget_class", TypeIntFn),
            type_size: function!(lib, "H5Tget_size", TypeSizeFn),
            type_nmembers: function!(lib, "H5Tget_nmembers", TypeIntFn),
            type_member: function!(lib, "H5Tget_member_type", MemberIdFn),
            type_member_offset: function!(lib, "H5Tget_member_offset", MemberSizeFn),
            type_super: function!(lib, "H5Tget_super", TypeIdFn),
            type_is_variable_str: function!(lib, "H5Tis_variable_str", TypeIntFn),
            type_sign: function!(lib, "H5Tget_sign", TypeIntFn),
            type_order: function!(lib, "H5Tget_order", TypeIntFn),
            type_close: function!(lib, "H5Tclose", CloseFn),
            allocate: function!(lib, "H5allocate_memory", AllocateFn),
            free: function!(lib, "H5free_memory", FreeFn),
        }
    }

    /// True when errors a filter callback pushes reach the caller. HDF5 2.0 runs filter
    /// callbacks between `H5E_user_cb_prepare` and `H5E_user_cb_restore`, which put the
    /// caller's error stack back and so discard anything the callback pushed.
    pub fn filter_errors_reach_caller(&self) -> bool {
        self.version.is_some_and(|v| v < (2, 0, 0))
    }

    /// Pushes `message` onto the thread's HDF5 error stack (falls back to stderr when
    /// the error API could not be resolved).
    pub fn push_error(
        &self,
        minor: Minor,
        function: &str,
        location: &std::panic::Location,
        message: &str,
    ) {
        let minor = match minor {
            Minor::CanApply => self.minor_can_apply,
            Minor::SetLocal => self.minor_set_local,
            Minor::Callback => self.minor_callback,
        };
        let (Some(epush), Some(class), Some(major), Some(minor)) =
            (self.epush, self.err_class, self.major_pline, minor)
        else {
            eprintln!("{message}");
            return;
        };
        let sanitize = |s: &str| CString::new(s.replace('\0', " ")).expect("NULs removed");
        let (file, function, message) = (
            sanitize(location.file()),
            sanitize(function),
            sanitize(message),
        );
        // SAFETY: the id addresses point at HDF5's initialised global error ids; all
        // strings are valid C strings and the format consumes exactly one of them.
        unsafe {
            epush(
                H5E_DEFAULT,
                file.as_ptr(),
                function.as_ptr(),
                location.line(),
                *class,
                *major,
                *minor,
                c"%s".as_ptr(),
                message.as_ptr(),
            );
        }
    }

    /// Chunk dimensions of the dataset creation property list `dcpl`.
    pub fn chunk_dims(&self, dcpl: Hid) -> Result<Vec<u64>, String> {
        let get_chunk = self.get_chunk.ok_or("H5Pget_chunk not found")?;
        let mut dims = [0 as Hsize; 32];
        // SAFETY: `dims` has room for the 32 dimensions HDF5 may write.
        let rank = unsafe { get_chunk(dcpl, dims.len() as c_int, dims.as_mut_ptr()) };
        if rank <= 0 {
            return Err("the dataset is not chunked (karoo needs a chunked layout)".into());
        }
        Ok(dims[..rank as usize].to_vec())
    }

    /// karoo's flags and cd_values as currently set in `dcpl`.
    pub fn filter_values(&self, dcpl: Hid, filter_id: c_int) -> Result<(c_uint, Vec<u32>), String> {
        let get_filter = self.get_filter.ok_or("H5Pget_filter_by_id2 not found")?;
        let mut flags: c_uint = 0;
        let mut values = [0 as c_uint; 64];
        let mut count = values.len();
        let mut config: c_uint = 0;
        // SAFETY: every out-pointer refers to a live local of the right type; `count`
        // tells HDF5 the capacity of `values`, and the name buffer length is 0.
        let status = unsafe {
            get_filter(
                dcpl,
                filter_id,
                &mut flags,
                &mut count,
                values.as_mut_ptr(),
                0,
                std::ptr::null_mut(),
                &mut config,
            )
        };
        if status < 0 {
            return Err("cannot read karoo's cd_values from the property list".into());
        }
        if count > values.len() {
            return Err(format!(
                "{count} cd_values given, at most {} accepted",
                values.len()
            ));
        }
        Ok((flags, values[..count].to_vec()))
    }

    /// Ids of the filters in `dcpl`'s pipeline, in write order.
    pub fn filter_ids(&self, dcpl: Hid) -> Result<Vec<c_int>, String> {
        let nfilters = self.nfilters.ok_or("H5Pget_nfilters not found")?;
        let get_filter = self.get_filter2.ok_or("H5Pget_filter2 not found")?;
        // SAFETY: plain call on a property list id HDF5 handed us.
        let n = unsafe { nfilters(dcpl) };
        (0..n.max(0) as c_uint)
            .map(|index| {
                let (mut flags, mut count, mut config) = (0, 0, 0);
                // SAFETY: `index` is below the filter count; the out-pointers refer to live
                // locals, and a zero value count and name length let HDF5 write nothing else.
                let id = unsafe {
                    get_filter(
                        dcpl,
                        index,
                        &mut flags,
                        &mut count,
                        std::ptr::null_mut(),
                        0,
                        std::ptr::null_mut(),
                        &mut config,
                    )
                };
                if id < 0 {
                    Err("cannot read the filter pipeline".to_string())
                } else {
                    Ok(id)
                }
            })
            .collect()
    }

    /// Replaces karoo's cd_values in `dcpl`.
    pub fn set_filter_values(
        &self,
        dcpl: Hid,
        filter_id: c_int,
        flags: c_uint,
        values: &[u32],
    ) -> Result<(), String> {
        let modify = self.modify_filter.ok_or("H5Pmodify_filter not found")?;
        // SAFETY: `values` is a live slice of `values.len()` unsigned ints.
        let status = unsafe { modify(dcpl, filter_id, flags, values.len(), values.as_ptr()) };
        if status < 0 {
            return Err("cannot store karoo's cd_values in the property list".into());
        }
        Ok(())
    }

    /// The datatype's class (`H5T_class_t`) and size in bytes.
    pub fn type_class_size(&self, type_id: Hid) -> Result<(c_int, usize), String> {
        let (class, size) = (
            self.type_class.ok_or("H5Tget_class not found")?,
            self.type_size.ok_or("H5Tget_size not found")?,
        );
        // SAFETY: plain calls on an id HDF5 handed us; failures are negative/zero.
        let (class, size) = unsafe { (class(type_id), size(type_id)) };
        if class < 0 || size == 0 {
            return Err("cannot query the dataset's datatype".into());
        }
        Ok((class, size))
    }

    /// Class, size and byte offset of each member of a compound type.
    pub fn compound_members(&self, type_id: Hid) -> Result<Vec<(c_int, usize, usize)>, String> {
        let nmembers = self.type_nmembers.ok_or("H5Tget_nmembers not found")?;
        let member = self.type_member.ok_or("H5Tget_member_type not found")?;
        let offset = self
            .type_member_offset
            .ok_or("H5Tget_member_offset not found")?;
        // SAFETY: plain call on an id HDF5 handed us.
        let n = unsafe { nmembers(type_id) };
        (0..n.max(0) as c_uint)
            .map(|i| {
                // SAFETY: `i` is below the member count HDF5 reported.
                let member_type = unsafe { member(type_id, i) };
                if member_type < 0 {
                    return Err("cannot query a compound member".to_string());
                }
                let info = self.type_class_size(member_type);
                self.close_type(member_type);
                // SAFETY: as above.
                let at = unsafe { offset(type_id, i) };
                info.map(|(class, size)| (class, size, at))
            })
            .collect()
    }

    /// Class and size of the base type of an array type.
    pub fn array_base(&self, type_id: Hid) -> Result<(c_int, usize), String> {
        let get_super = self.type_super.ok_or("H5Tget_super not found")?;
        // SAFETY: plain call on an id HDF5 handed us.
        let base = unsafe { get_super(type_id) };
        if base < 0 {
            return Err("cannot query the array's base type".into());
        }
        let info = self.type_class_size(base);
        self.close_type(base);
        info
    }

    /// Whether an integer datatype is signed (`H5Tget_sign`: two's complement), if known.
    pub fn is_signed(&self, type_id: Hid) -> Option<bool> {
        // SAFETY: plain call on an id HDF5 handed us; failure is negative.
        match unsafe { (self.type_sign?)(type_id) } {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// Whether the datatype's numbers are big-endian (`H5Tget_order`; for a compound
    /// type, its members' common order), if the order is one of the two.
    pub fn is_big_endian(&self, type_id: Hid) -> Option<bool> {
        // SAFETY: plain call on an id HDF5 handed us; failure is negative.
        match unsafe { (self.type_order?)(type_id) } {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// Whether the datatype is a variable-length string.
    pub fn is_variable_string(&self, type_id: Hid) -> Result<bool, String> {
        let is_variable = self
            .type_is_variable_str
            .ok_or("H5Tis_variable_str not found")?;
        // SAFETY: plain call on an id HDF5 handed us; failure is negative.
        match unsafe { is_variable(type_id) } {
            status if status < 0 => Err("cannot query the dataset's string type".into()),
            status => Ok(status > 0),
        }
    }

    fn close_type(&self, type_id: Hid) {
        if let Some(close) = self.type_close {
            // SAFETY: `type_id` was opened by H5Tget_member_type / H5Tget_super.
            unsafe { close(type_id) };
        }
    }

    /// A buffer of `len` bytes from HDF5's allocator (malloc if unresolved) not yet
    /// initialised, which HDF5 can take over as a chunk buffer once it is.
    pub fn allocate_uninit(&'static self, len: usize) -> Result<UninitBuffer, String> {
        self.allocate_buffer(len).map(UninitBuffer)
    }

    /// A buffer from HDF5's allocator holding `parts` one after another, `len` bytes in
    /// all (no zero fill first).
    ///
    /// # Panics
    ///
    /// If the parts do not add up to `len` bytes.
    pub fn allocate_concat<'a>(
        &'static self,
        parts: impl Iterator<Item = &'a [u8]>,
        len: usize,
    ) -> Result<Hdf5Buffer, String> {
        let buffer = self.allocate_buffer(len)?;
        // SAFETY: the buffer holds `len` freshly allocated bytes that no part overlaps.
        unsafe { write_parts(parts, buffer.ptr.cast::<u8>(), len) };
        Ok(buffer)
    }

    /// `len` bytes from HDF5's allocator, not initialised.
    fn allocate_buffer(&'static self, len: usize) -> Result<Hdf5Buffer, String> {
        let size = len.max(1);
        // SAFETY: allocating raw memory; the pointer is checked before use.
        let ptr = unsafe {
            match self.allocate {
                Some(allocate) => allocate(size, false),
                None => libc::malloc(size),
            }
        };
        if ptr.is_null() {
            return Err(format!(
                "cannot allocate {size} bytes for the filter output"
            ));
        }
        Ok(Hdf5Buffer {
            api: self,
            ptr,
            len,
        })
    }

    /// Frees a buffer HDF5 handed to the filter.
    pub fn free(&self, ptr: *mut c_void) {
        // SAFETY: `ptr` came from HDF5's allocator (the chunk buffer) and is not used again.
        unsafe {
            match self.free {
                Some(free) => {
                    free(ptr);
                }
                None => libc::free(ptr),
            }
        }
    }
}

/// Writes `parts` one after another to the `len` bytes at `dst`, which they must fill
/// exactly (initialising them).
///
/// # Panics
///
/// If the parts do not add up to `len` bytes (nothing is written beyond them).
///
/// # Safety
///
/// `dst` must be valid for writes of `len` bytes that no part overlaps.
pub unsafe fn write_parts<'a>(parts: impl Iterator<Item = &'a [u8]>, dst: *mut u8, len: usize) {
    let mut at = 0;
    for part in parts {
        assert!(part.len() <= len - at, "parts longer than {len} bytes");
        // SAFETY: `at + part.len() <= len` (asserted), so the copy stays within the
        // caller's `len` writable bytes, which `part` does not overlap.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), dst.add(at), part.len()) };
        at += part.len();
    }
    assert_eq!(at, len, "parts shorter than {len} bytes");
}

/// A buffer from HDF5's allocator, freed on drop unless handed over with `into_raw`.
pub struct Hdf5Buffer {
    api: &'static Hdf5,
    ptr: *mut c_void,
    len: usize,
}

impl Hdf5Buffer {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Gives up ownership: the caller (HDF5) frees the buffer.
    pub fn into_raw(self) -> *mut c_void {
        let ptr = self.ptr;
        std::mem::forget(self);
        ptr
    }
}

impl Drop for Hdf5Buffer {
    fn drop(&mut self) {
        self.api.free(self.ptr);
    }
}

/// A buffer from HDF5's allocator whose bytes are not all initialised yet (freed on drop
/// like [`Hdf5Buffer`]).
pub struct UninitBuffer(Hdf5Buffer);

impl UninitBuffer {
    /// The buffer's bytes, possibly uninitialised.
    pub fn as_uninit_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        // SAFETY: `ptr` points at `len` bytes owned by this buffer; `MaybeUninit<u8>`
        // makes no claim about their contents.
        unsafe { std::slice::from_raw_parts_mut(self.0.ptr.cast::<MaybeUninit<u8>>(), self.0.len) }
    }

    /// The buffer, every byte of which has been written.
    ///
    /// # Safety
    ///
    /// Every byte of [`Self::as_uninit_mut`] must have been initialised.
    pub unsafe fn assume_init(self) -> Hdf5Buffer {
        self.0
    }
}

/// `region` zero-filled, as initialised bytes.
pub fn zero_fill(region: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    let len = region.len();
    let ptr = region.as_mut_ptr().cast::<u8>();
    // SAFETY: `ptr` points at `len` bytes borrowed mutably for the result's lifetime,
    // and `write_bytes` initialises every one of them before the slice is made
    // (`MaybeUninit<u8>` has the layout of `u8`).
    unsafe {
        std::ptr::write_bytes(ptr, 0, len);
        std::slice::from_raw_parts_mut(ptr, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_written_one_after_another_and_must_fill_the_output() {
        let mut out = [0u8; 5];
        // SAFETY: `out` holds 5 writable bytes that no part overlaps.
        unsafe {
            write_parts(
                [&[1u8, 2][..], &[], &[3, 4, 5]].into_iter(),
                out.as_mut_ptr(),
                5,
            )
        };
        assert_eq!(out, [1, 2, 3, 4, 5]);
        let mut two = [0u8; 2];
        let short = std::panic::catch_unwind(move || {
            // SAFETY: as above, 2 bytes.
            unsafe { write_parts([&[1u8][..]].into_iter(), two.as_mut_ptr(), 2) }
        });
        assert!(short.is_err());
        let mut one = [0u8; 1];
        let long = std::panic::catch_unwind(move || {
            // SAFETY: as above, 1 byte; the part that does not fit is refused unwritten.
            unsafe { write_parts([&[1u8, 2][..]].into_iter(), one.as_mut_ptr(), 1) }
        });
        assert!(long.is_err());
    }
}
