//! The three HDF5 filter callbacks, each run against the libhdf5 (`api`) whose filter
//! class called it (see `binding`). Each one catches every error and panic, pushes a
//! message onto the HDF5 error stack and returns HDF5's failure value: nothing here
//! may unwind into C or abort the host process.

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};
use std::panic::catch_unwind;

use crate::cd_values::{creation_options, ElementLayout, FilterConfig, USER_VALUES};
use crate::ffi::{type_class, Herr, Hid, Htri, H5Z_FLAG_OPTIONAL, H5Z_FLAG_REVERSE};
use crate::guard::chunks_reach_karoo_whole;
use crate::hdf5::{write_parts, zero_fill, Hdf5, Minor};
use crate::panics::caught;
use crate::FILTER_ID;
use karoo::{ElementType, TypeKind};

/// Runs `body`, turning an error or a panic into a pushed HDF5 error and `failure`.
#[track_caller]
fn guarded<T>(
    api: &Hdf5,
    function: &str,
    minor: Minor,
    failure: T,
    body: impl FnOnce() -> Result<T, String>,
) -> T {
    let message = match caught(body) {
        Ok(value) => return value,
        Err(message) => message,
    };
    let message = if message.starts_with("karoo") {
        message
    } else {
        format!("karoo: {message}")
    };
    // Reporting the error must not unwind either.
    let location = std::panic::Location::caller();
    let _ = catch_unwind(|| {
        api.push_error(minor, function, location, &message);
        if matches!(minor, Minor::Callback) && !api.filter_errors_reach_caller() {
            eprintln!("{message}");
        }
    });
    failure
}

/// Why karoo refuses variable-length data as a mandatory filter.
pub const VARIABLE_LENGTH_REFUSAL: &str = "karoo: variable-length data (strings, sequences) \
    cannot be compressed: the chunks hold only references to the heap; add karoo as an \
    optional filter (h5py does) to store such datasets unfiltered";

/// `can_apply`: accepts the dataset if the user's cd_values and the chunk fit together.
/// Variable-length data is accepted as an optional filter (which then passes the chunks
/// through) and refused as a mandatory one, as HDF5 1.10.8 and later do themselves (then
/// never asking karoo).
///
/// # Safety
/// Called by HDF5 (the library of `api`) with valid property list and datatype ids of it.
pub unsafe fn can_apply(api: &Hdf5, dcpl: Hid, type_id: Hid, _space: Hid) -> Htri {
    guarded(api, "karoo_can_apply", Minor::CanApply, -1, || {
        let (flags, values) = api.filter_values(dcpl, FILTER_ID)?;
        let user = creation_options(&values)?;
        user.check_chunk(&api.chunk_dims(dcpl)?)?;
        if is_variable_length(api, type_id)? {
            if flags & H5Z_FLAG_OPTIONAL != 0 {
                return Ok(1);
            }
            let location = std::panic::Location::caller();
            api.push_error(
                Minor::CanApply,
                "karoo_can_apply",
                location,
                VARIABLE_LENGTH_REFUSAL,
            );
            return Ok(0);
        }
        element_layout(api, type_id)?;
        Ok(1)
    })
}

/// `set_local`: appends the element layout and chunk shape to the user's cd_values (a
/// complete array copied from another dataset has its layout part derived again).
/// Variable-length data keeps only the user's values: the filter passes it through.
///
/// # Safety
/// Called by HDF5 (the library of `api`) with valid property list and datatype ids of it.
pub unsafe fn set_local(api: &Hdf5, dcpl: Hid, type_id: Hid, _space: Hid) -> Herr {
    guarded(api, "karoo_set_local", Minor::SetLocal, -1, || {
        let (flags, values) = api.filter_values(dcpl, FILTER_ID)?;
        let user = creation_options(&values)?;
        if is_variable_length(api, type_id)? {
            let kept = &user.raw[..values.len().min(USER_VALUES)];
            api.set_filter_values(dcpl, FILTER_ID, flags, kept)?;
            return Ok(0);
        }
        let chunk = api.chunk_dims(dcpl)?;
        user.check_chunk(&chunk)?;
        if chunk.iter().any(|&d| d > u64::from(u32::MAX)) {
            return Err("chunk dimension does not fit in 32 bits".into());
        }
        // Chunks reach karoo as HDF5 hands them over unless a filter before it changes
        // their size (a byte shuffle does not).
        let pipeline = api.filter_ids(dcpl).unwrap_or_default();
        let config = FilterConfig {
            user,
            element: element_layout(api, type_id)?,
            chunk,
            exact_size: chunks_reach_karoo_whole(&pipeline, FILTER_ID),
        };
        api.set_filter_values(dcpl, FILTER_ID, flags, &config.to_values())?;
        Ok(0)
    })
}

/// The filter: compresses (or, with `H5Z_FLAG_REVERSE`, decompresses) the chunk in `*buf`.
///
/// # Safety
/// Called by HDF5 (the library of `api`) with `cd_values` pointing at `cd_nelmts` values
/// and `*buf` at a buffer of `*buf_size` bytes whose first `nbytes` are the chunk,
/// allocated by HDF5.
pub unsafe fn filter(
    api: &'static Hdf5,
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    guarded(api, "karoo_filter", Minor::Callback, 0, || {
        // HDF5's deflate reports its input size in *buf_size even when it returns more
        // bytes, so `nbytes` may exceed it; HDF5 always allocates at least `nbytes`.
        if buf.is_null() || buf_size.is_null() || (*buf).is_null() {
            return Err("invalid buffer handed to the filter".into());
        }
        let values: &[u32] = if cd_values.is_null() || cd_nelmts == 0 {
            &[]
        } else {
            // SAFETY: HDF5 passes `cd_nelmts` valid values.
            std::slice::from_raw_parts(cd_values, cd_nelmts)
        };
        let config = FilterConfig::from_values(values);
        let output = if flags & H5Z_FLAG_REVERSE != 0 {
            // SAFETY: HDF5 guarantees `*buf` holds at least `nbytes` initialised bytes.
            let input = std::slice::from_raw_parts(*buf as *const u8, nbytes);
            // Decoding relies on the chunk's own header; cd_values only cap the size.
            let limit = config.as_ref().map_or(u64::MAX, FilterConfig::decode_limit);
            let threads = config.as_ref().map_or(0, |c| c.user.threads);
            let chunk = karoo::Chunk::parse(input, limit).map_err(|e| e.to_string())?;
            if let Ok(config) = &config {
                config.check_decoded_len(chunk.decoded_len())?;
            }
            // Not zero-filled here: each tile's region is, by the thread that decodes
            // it, just before (parallel, and in cache for the decoder).
            let mut output = api.allocate_uninit(chunk.decoded_len())?;
            chunk
                .decode_into_regions(output.as_uninit_mut(), threads, zero_fill)
                .map_err(|e| e.to_string())?;
            // SAFETY: decoding succeeded, so every byte went through `zero_fill`
            // (`decode_into_regions`' contract).
            unsafe { output.assume_init() }
        } else {
            let config = match config {
                Ok(config) => config,
                // HDF5 did not run set_local: it skips it for data on which it ignores
                // optional filters (variable-length types, HDF5 1.10.8 and later), and
                // karoo's set_local leaves such data alone on older versions. Declining
                // makes HDF5 store the chunk as it is, silently.
                Err(_) if values.len() <= USER_VALUES && flags & H5Z_FLAG_OPTIONAL != 0 => {
                    return Ok(0)
                }
                Err(e) => return Err(format!("cannot compress: {e}")),
            };
            let packed = {
                // SAFETY: HDF5 guarantees `*buf` holds at least `nbytes` initialised
                // bytes; this borrow ends before the buffer is written below.
                let input = std::slice::from_raw_parts(*buf as *const u8, nbytes);
                karoo::compress_parts(input, &config.params(nbytes)).map_err(|e| e.to_string())?
            };
            check_output_len(packed.len(), nbytes)?;
            let len = packed.len();
            if len <= nbytes {
                // The chunk is coded and its parts are karoo's own buffers: the header and
                // tile payloads overwrite the chunk in HDF5's buffer, which keeps its
                // allocation and size (no allocation, no page faults of fresh memory, no
                // free). Dropping `packed` keeps the parts' memory for the next chunk.
                // SAFETY: `*buf` holds at least `nbytes >= len` bytes and no part
                // overlaps it (the parts are karoo's buffers, not the input).
                write_parts(packed.parts(), (*buf).cast::<u8>(), len);
                return Ok(len);
            }
            // Stored verbatim (a header longer than the chunk): a larger buffer. The header
            // and tile payloads go straight into it (one copy, not two).
            api.allocate_concat(packed.parts(), len)?
        };
        let len = output.len();
        api.free(*buf);
        *buf = output.into_raw();
        *buf_size = len.max(1);
        Ok(len)
    })
}

/// Largest filtered chunk HDF5 hands back whole on read: with `libver="latest"` it
/// writes larger ones but reads them back truncated to 32 bits of length.
pub const MAX_FILTERED_CHUNK: usize = u32::MAX as usize;

/// Refuses an output HDF5 could not read back (an incompressible chunk within a header
/// of HDF5's 4 GiB chunk limit, stored verbatim): the write fails instead of the read.
fn check_output_len(len: usize, input: usize) -> Result<(), String> {
    if len > MAX_FILTERED_CHUNK {
        return Err(format!(
            "chunk of {input} bytes codes to {len} bytes, more than the {MAX_FILTERED_CHUNK} \
             HDF5 reads back; use smaller chunks"
        ));
    }
    Ok(())
}

/// Whether elements of datatype `type_id` are variable-length (sequences or strings),
/// which the chunks hold as references to data stored elsewhere in the file.
fn is_variable_length(api: &Hdf5, type_id: Hid) -> Result<bool, String> {
    match api.type_class_size(type_id)?.0 {
        type_class::VLEN => Ok(true),
        type_class::STRING => api.is_variable_string(type_id),
        _ => Ok(false),
    }
}

/// Karoo's word layout for elements of datatype `type_id`.
fn element_layout(api: &Hdf5, type_id: Hid) -> Result<ElementLayout, String> {
    let (hdf5_class, size) = api.type_class_size(type_id)?;
    let element_size = u32::try_from(size).map_err(|_| format!("element size {size} too large"))?;
    let code = |class: c_int| match class {
        type_class::INTEGER | type_class::ENUM | type_class::BITFIELD => 1,
        type_class::FLOAT => 2,
        _ => 0,
    };
    let word_sized = |s: usize| matches!(s, 2 | 4 | 8);
    let (word, class) = match hdf5_class {
        type_class::INTEGER | type_class::FLOAT | type_class::ENUM | type_class::BITFIELD
            if matches!(size, 1 | 2 | 4 | 8) =>
        {
            (size, code(hdf5_class))
        }
        type_class::COMPOUND => {
            let members = api.compound_members(type_id)?;
            match members.first() {
                Some(&(first_class, s, _))
                    if code(first_class) != 0
                        && word_sized(s)
                        && members.len() * s == size
                        && members.iter().enumerate().all(|(i, &(c, ms, at))| {
                            code(c) == code(first_class) && ms == s && at == i * s
                        }) =>
                {
                    (s, code(first_class))
                }
                _ => (1, 0),
            }
        }
        type_class::ARRAY => match api.array_base(type_id)? {
            (base, s) if code(base) != 0 && word_sized(s) && size % s == 0 => (s, code(base)),
            _ => (1, 0),
        },
        _ => (1, 0),
    };
    let components = size / word;
    Ok(ElementLayout {
        element_size,
        class,
        word_size: word as u32,
        components: components as u32,
        element_type: element_type(api, type_id, hdf5_class, class, word, components),
    })
}

/// The element type recorded in the chunks of datatype `type_id` (of HDF5 class
/// `hdf5_class`, karoo class `class`): integers, floats and compounds of two floats
/// (complex numbers) of a known byte order; unknown for anything else.
fn element_type(
    api: &Hdf5,
    type_id: Hid,
    hdf5_class: c_int,
    class: u32,
    word: usize,
    components: usize,
) -> ElementType {
    let kind = match (hdf5_class, class, components) {
        (type_class::INTEGER, 1, 1) => match api.is_signed(type_id) {
            Some(true) => TypeKind::Signed,
            Some(false) => TypeKind::Unsigned,
            None => return ElementType::default(),
        },
        (type_class::FLOAT, 2, 1) if matches!(word, 2 | 4 | 8) => TypeKind::Float,
        (type_class::COMPOUND, 2, 2) if matches!(word, 4 | 8) => TypeKind::Complex,
        _ => return ElementType::default(),
    };
    match api.is_big_endian(type_id) {
        Some(big_endian) => ElementType {
            big_endian,
            ..ElementType::of(kind)
        },
        None => ElementType::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_beyond_what_hdf5_reads_back_are_refused() {
        assert_eq!(check_output_len(MAX_FILTERED_CHUNK, 1), Ok(()));
        assert_eq!(
            check_output_len(4_294_967_376, 4_294_967_264).unwrap_err(),
            "chunk of 4294967264 bytes codes to 4294967376 bytes, more than the 4294967295 \
             HDF5 reads back; use smaller chunks"
        );
    }
}
