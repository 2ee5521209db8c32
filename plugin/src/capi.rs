//! A small C ABI over the codec, for callers outside HDF5 (the Python package uses it
//! through `ctypes`, which releases the GIL for the length of each call).
//!
//! Every function returns 0 on success and -1 on failure, with the failure's message
//! (NUL-terminated, truncated to fit) in the caller's `err` buffer of `err_len` bytes.
//! Nothing unwinds out: a panic becomes an error.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

use karoo::internals::{Header, Scales};
use karoo::{Coder, ElementKind, ElementType, Mode, Packed, Params, Predictor, ResidualMap};

use crate::cd_values::PREDICTOR_AUTO;
use crate::hdf5::write_parts;
use crate::panics::caught;

/// What `karoo_compress` is told about the data: the same options as the filter's
/// cd_values, plus the layout HDF5 would have supplied.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KarooParams {
    /// Bytes per word: 1, 2, 4 or 8.
    pub word_size: u32,
    /// Words per element (2 for complex numbers); the last dimension of `shape`.
    pub components: u32,
    /// Element class: 0 other, 1 integer, 2 float (`cd_values[7]`).
    pub element_class: u32,
    /// 0 fast, 1 archive.
    pub mode: u32,
    /// Predictor id (0 or 12 auto), as in `cd_values[1]`'s low byte.
    pub predictor: u32,
    /// Residual map id (0 auto).
    pub residual_map: u32,
    /// Residual coder id (0 default).
    pub coder: u32,
    /// Worker threads, 0 all cores.
    pub threads: u32,
    /// Index of the time axis in `shape`.
    pub time_axis: u32,
    /// Number of dimensions in `shape` (the component axis included).
    pub rank: u32,
    /// Elements between successive samples of a series; 0 derives it.
    pub lag: u64,
    /// Shape in words, slowest first (`rank` values).
    pub shape: *const u64,
    /// The element type byte recorded in the chunk (docs/format.md, "Element type"): 0
    /// when not known.
    pub element_type: u32,
    /// Effort level: 0 the mode's default, 1 fastest to 9 smallest (as in `cd_values[0]`).
    pub level: u32,
}

/// A compressed chunk (or other bytes) owned by the plugin, possibly in several parts
/// (the header and each tile's payload): read its length with `karoo_buffer_len`, copy
/// it to the caller's memory with `karoo_buffer_copy` (the parts are never joined in a
/// buffer of their own: that would hold the chunk twice), release it with
/// `karoo_buffer_free`.
pub struct KarooBuffer(Packed);

fn write_error(err: *mut c_char, err_len: usize, message: &str) {
    if err.is_null() || err_len == 0 {
        return;
    }
    let bytes = message.as_bytes();
    let n = bytes.len().min(err_len - 1);
    // SAFETY: the caller hands a writable buffer of `err_len` bytes; `n + 1 <= err_len`.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), err.cast::<u8>(), n);
        *err.add(n) = 0;
    }
}

/// Runs `body`, turning an error or panic into -1 and a message in `err`.
fn guarded(err: *mut c_char, err_len: usize, body: impl FnOnce() -> Result<(), String>) -> c_int {
    let message = match caught(body) {
        Ok(()) => return 0,
        Err(message) => message,
    };
    let message = if message.starts_with("karoo") {
        message
    } else {
        format!("karoo: {message}")
    };
    write_error(err, err_len, &message);
    -1
}

/// Codec parameters from the C description, validated like cd_values.
fn params_from(p: &KarooParams) -> Result<Params, String> {
    let mode = Mode::from_id(p.mode)
        .ok_or_else(|| format!("unknown mode {} (0 = fast, 1 = archive)", p.mode))?;
    let predictor = match p.predictor {
        0 | PREDICTOR_AUTO => None,
        id => Some(Predictor::from_id(id).ok_or_else(|| format!("unknown predictor {id}"))?),
    };
    let residual_map = match p.residual_map {
        0 => None,
        id => Some(ResidualMap::from_id(id).ok_or_else(|| format!("unknown residual map {id}"))?),
    };
    let coder = match p.coder {
        0 => None,
        id => Some(Coder::from_id(id).ok_or_else(|| format!("unknown residual coder {id}"))?),
    };
    let element = match p.element_class {
        0 => ElementKind::Other,
        1 => ElementKind::Integer,
        2 => ElementKind::Float,
        c => {
            return Err(format!(
                "unknown element class {c} (0 other, 1 integer, 2 float)"
            ))
        }
    };
    if p.rank as usize > karoo::MAX_RANK || (p.rank > 0 && p.shape.is_null()) {
        return Err(format!("invalid shape of rank {}", p.rank));
    }
    let shape: Vec<usize> = if p.rank == 0 {
        Vec::new()
    } else {
        // SAFETY: the caller passes `rank` dimensions at `shape` (checked non-null).
        unsafe { std::slice::from_raw_parts(p.shape, p.rank as usize) }
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} too large")))
            .collect::<Result<_, _>>()?
    };
    let components = p.components.max(1) as usize;
    let lag = usize::try_from(p.lag)
        .ok()
        .and_then(|lag| lag.checked_mul(components))
        .ok_or_else(|| format!("lag {} too large", p.lag))?;
    let element_type = u8::try_from(p.element_type)
        .ok()
        .and_then(ElementType::from_byte)
        .ok_or_else(|| format!("unknown element type {:#x}", p.element_type))?;
    Ok(Params {
        word_size: p.word_size as usize,
        shape,
        time_axis: p.time_axis as usize,
        lag,
        predictor,
        residual_map,
        coder,
        element,
        components,
        threads: p.threads as usize,
        mode,
        element_type,
        // Levels above the highest are refused by the codec's own parameter check.
        level: u8::try_from(p.level).map_err(|_| format!("unknown level {}", p.level))?,
    })
}

/// Compresses `len` bytes at `data` into a new buffer stored in `*out`.
///
/// # Safety
/// `data` points at `len` readable bytes, `params` at a valid `KarooParams` whose
/// `shape` holds `rank` values, `out` is writable, `err` holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn karoo_compress(
    data: *const u8,
    len: usize,
    params: *const KarooParams,
    out: *mut *mut KarooBuffer,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    guarded(err, err_len, || {
        if (data.is_null() && len > 0) || params.is_null() || out.is_null() {
            return Err("null pointer passed to karoo_compress".into());
        }
        let input = if len == 0 {
            &[][..]
        } else {
            // SAFETY: the caller passes `len` readable bytes at `data`.
            unsafe { std::slice::from_raw_parts(data, len) }
        };
        // SAFETY: checked non-null; the caller passes a valid struct.
        let params = params_from(unsafe { &*params })?;
        let packed = karoo::compress_parts(input, &params).map_err(|e| e.to_string())?;
        // SAFETY: `out` is non-null and writable.
        unsafe { *out = Box::into_raw(Box::new(KarooBuffer(packed))) };
        Ok(())
    })
}

/// Copies a buffer's bytes, all `len` of them, to `dst`.
///
/// # Safety
/// `buffer` came from `karoo_compress` or `karoo_describe` and was not freed; `dst` holds
/// `len` writable bytes that do not overlap the buffer; `err` holds `err_len` writable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn karoo_buffer_copy(
    buffer: *const KarooBuffer,
    dst: *mut u8,
    len: usize,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    guarded(err, err_len, || {
        if buffer.is_null() || (dst.is_null() && len > 0) {
            return Err("null pointer passed to karoo_buffer_copy".into());
        }
        // SAFETY: the caller passes a live buffer.
        let packed = unsafe { &(*buffer).0 };
        if packed.len() != len {
            return Err(format!(
                "karoo_buffer_copy was given {len} bytes for a buffer of {}",
                packed.len()
            ));
        }
        // SAFETY: the caller passes `len` writable bytes at `dst` that no part overlaps,
        // and the parts add up to `len` bytes (checked above).
        unsafe { write_parts(packed.parts(), dst, len) };
        Ok(())
    })
}

/// Length of a buffer in bytes.
///
/// # Safety
/// `buffer` came from `karoo_compress` and was not freed.
#[no_mangle]
pub unsafe extern "C" fn karoo_buffer_len(buffer: *const KarooBuffer) -> usize {
    // SAFETY: the caller passes a live buffer.
    unsafe { (*buffer).0.len() }
}

/// Releases a buffer (its memory is kept for reuse by later calls).
///
/// # Safety
/// `buffer` came from `karoo_compress` and is not used again; null is ignored.
#[no_mangle]
pub unsafe extern "C" fn karoo_buffer_free(buffer: *mut KarooBuffer) {
    if !buffer.is_null() {
        // SAFETY: the buffer was made by Box::into_raw in karoo_compress.
        // Dropping the chunk keeps its parts' memory for later calls.
        drop(unsafe { Box::from_raw(buffer) });
    }
}

/// Validates a chunk's header and tile table and stores its decoded size in `*out`;
/// a chunk declaring more than `limit` bytes is refused.
///
/// # Safety
/// `data` points at `len` readable bytes, `out` is writable, `err` holds `err_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn karoo_decoded_len(
    data: *const u8,
    len: usize,
    limit: u64,
    out: *mut u64,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    guarded(err, err_len, || {
        if (data.is_null() && len > 0) || out.is_null() {
            return Err("null pointer passed to karoo_decoded_len".into());
        }
        // SAFETY: the caller passes `len` readable bytes (none when len is 0).
        let input = unsafe { slice(data, len) };
        let n = karoo::decoded_len(input, limit).map_err(|e| e.to_string())?;
        // SAFETY: `out` is non-null and writable.
        unsafe { *out = n as u64 };
        Ok(())
    })
}

/// Validates a chunk's header and tile table, refusing a chunk that declares more than
/// `limit` decoded bytes, and stores its decoded shape in words (slowest first, as
/// `karoo_describe`'s "shape") in `dims`, its rank in `*rank`, its word size in bytes in
/// `*word_size`, its element type byte (0: not recorded) in `*element_type` and its
/// decoded size in bytes in `*decoded`. A chunk of more than `max_rank` dimensions (at
/// most 64) is refused.
///
/// # Safety
/// `data` points at `len` readable bytes, `dims` at `max_rank` writable `u64`s, `rank`,
/// `word_size`, `element_type` and `decoded` are writable, `err` holds `err_len` bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn karoo_decoded_shape(
    data: *const u8,
    len: usize,
    limit: u64,
    dims: *mut u64,
    max_rank: usize,
    rank: *mut usize,
    word_size: *mut u32,
    element_type: *mut u32,
    decoded: *mut u64,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    guarded(err, err_len, || {
        if (data.is_null() && len > 0)
            || (dims.is_null() && max_rank > 0)
            || rank.is_null()
            || word_size.is_null()
            || element_type.is_null()
            || decoded.is_null()
        {
            return Err("null pointer passed to karoo_decoded_shape".into());
        }
        // SAFETY: the caller passes `len` readable bytes.
        let input = unsafe { slice(data, len) };
        let chunk = karoo::Chunk::parse(input, limit).map_err(|e| e.to_string())?;
        let shape = chunk.decoded_shape();
        if shape.len() > max_rank {
            return Err(format!(
                "the chunk's shape has {} dimensions, more than the {max_rank} asked for",
                shape.len()
            ));
        }
        // SAFETY: `dims` holds `max_rank >= shape.len()` writable values; the other
        // pointers are non-null and writable.
        unsafe {
            std::ptr::copy_nonoverlapping(shape.as_ptr(), dims, shape.len());
            *rank = shape.len();
            *word_size = chunk.word_size() as u32;
            *element_type = u32::from(chunk.element_type().to_byte());
            *decoded = chunk.decoded_len() as u64;
        }
        Ok(())
    })
}

/// Decodes a chunk into `out`, which must be exactly its decoded size, on `threads`
/// workers (0 all cores), checking the checksums.
///
/// # Safety
/// `data` points at `len` readable bytes, `out` at `out_len` writable bytes that do not
/// overlap them, `err` at `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn karoo_decompress_into(
    data: *const u8,
    len: usize,
    out: *mut u8,
    out_len: usize,
    threads: u32,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    guarded(err, err_len, || {
        if (data.is_null() && len > 0) || (out.is_null() && out_len > 0) {
            return Err("null pointer passed to karoo_decompress_into".into());
        }
        // SAFETY: the caller passes `len` readable bytes.
        let input = unsafe { slice(data, len) };
        let output: &mut [u8] = if out_len == 0 {
            &mut []
        } else {
            // SAFETY: the caller passes `out_len` writable bytes not aliasing `input`.
            unsafe { std::slice::from_raw_parts_mut(out, out_len) }
        };
        karoo::decompress_into(input, output, threads as usize).map_err(|e| e.to_string())
    })
}

/// Describes a chunk (header fields and the coding of each tile) as a JSON object in a
/// new buffer stored in `*out`, without decoding it.
///
/// # Safety
/// As `karoo_decoded_len`; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn karoo_describe(
    data: *const u8,
    len: usize,
    out: *mut *mut KarooBuffer,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    guarded(err, err_len, || {
        if (data.is_null() && len > 0) || out.is_null() {
            return Err("null pointer passed to karoo_describe".into());
        }
        // SAFETY: the caller passes `len` readable bytes.
        let input = unsafe { slice(data, len) };
        let json = describe(input)?;
        // SAFETY: `out` is non-null and writable.
        unsafe { *out = Box::into_raw(Box::new(KarooBuffer(json.into_bytes().into()))) };
        Ok(())
    })
}

/// The vector kernels the codec runs (`avx512`, `avx2` or `portable`; see
/// `karoo::kernels`), NUL-terminated.
#[no_mangle]
pub extern "C" fn karoo_kernels() -> *const c_char {
    match karoo::kernels() {
        "avx512" => c"avx512".as_ptr(),
        "avx2" => c"avx2".as_ptr(),
        _ => c"portable".as_ptr(),
    }
}

/// The C type of a [`KarooParams`] field, as [`karoo_params_layout`] names it.
trait FieldType {
    /// `u32`, `u64` or `ptr` (a pointer to `u64`).
    const NAME: &'static str;
}

impl FieldType for u32 {
    const NAME: &'static str = "u32";
}

impl FieldType for u64 {
    const NAME: &'static str = "u64";
}

impl FieldType for *const u64 {
    const NAME: &'static str = "ptr";
}

/// The name of the type of the field `field` reads.
fn field_type<T: FieldType>(_field: fn(&KarooParams) -> &T) -> &'static str {
    T::NAME
}

/// (name, type, offset) of every field of [`KarooParams`]; the destructuring fails to
/// compile if a field is left out.
macro_rules! params_fields {
    ($($field:ident),* $(,)?) => {{
        let _every_field = |p: KarooParams| {
            let KarooParams { $($field: _),* } = p;
        };
        vec![$((
            stringify!($field),
            field_type(|p| &p.$field),
            std::mem::offset_of!(KarooParams, $field),
        )),*]
    }};
}

/// The fields of [`KarooParams`] in offset order.
fn params_fields() -> Vec<(&'static str, &'static str, usize)> {
    let mut fields = params_fields!(
        word_size,
        components,
        element_class,
        mode,
        predictor,
        residual_map,
        coder,
        threads,
        time_axis,
        rank,
        lag,
        shape,
        element_type,
        level,
    );
    fields.sort_by_key(|&(_, _, offset)| offset);
    fields
}

/// The layout of [`KarooParams`], NUL-terminated: a first line with its size in bytes,
/// then one `name type offset` line per field in offset order (types `u32`, `u64` and
/// `ptr`, a pointer to `u64`). The Python package builds its ctypes structure from it
/// instead of repeating the fields.
#[no_mangle]
pub extern "C" fn karoo_params_layout() -> *const c_char {
    static LAYOUT: OnceLock<CString> = OnceLock::new();
    LAYOUT
        .get_or_init(|| {
            let mut text = format!("{}\n", std::mem::size_of::<KarooParams>());
            for (name, kind, offset) in params_fields() {
                text.push_str(&format!("{name} {kind} {offset}\n"));
            }
            CString::new(text).expect("field names have no NUL")
        })
        .as_ptr()
}

/// The names of the codec's predictors (`kind` 0), residual maps (1) or coders (2), one
/// `id name` line each in id order, NUL-terminated; null for any other `kind`. These
/// are the names the Python package accepts (and stores in numcodecs and Zarr configs):
/// it reads them here instead of repeating them.
#[no_mangle]
pub extern "C" fn karoo_names(kind: c_int) -> *const c_char {
    static TABLES: OnceLock<[CString; 3]> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        let lines = |rows: Vec<(u8, String)>| {
            let text: String = rows
                .iter()
                .map(|(id, name)| format!("{id} {name}\n"))
                .collect();
            CString::new(text).expect("names have no NUL")
        };
        let mut predictors: Vec<Predictor> = Predictor::ALL.to_vec();
        predictors.push(Predictor::Zero);
        [
            lines(predictors.into_iter().map(|p| (p.id(), p.name())).collect()),
            lines(
                ResidualMap::ALL
                    .into_iter()
                    .map(|m| (m.id(), m.name().into()))
                    .collect(),
            ),
            lines(
                Coder::ALL
                    .into_iter()
                    .map(|c| (c.id(), c.name().into()))
                    .collect(),
            ),
        ]
    });
    match usize::try_from(kind).ok().and_then(|k| tables.get(k)) {
        Some(table) => table.as_ptr(),
        None => std::ptr::null(),
    }
}

/// The crate version, NUL-terminated.
#[no_mangle]
pub extern "C" fn karoo_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// # Safety
/// `data` points at `len` readable bytes, or `len` is 0.
unsafe fn slice<'a>(data: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: as the function's contract says.
        unsafe { std::slice::from_raw_parts(data, len) }
    }
}

/// The JSON description of a chunk (see `karoo_describe`).
fn describe(input: &[u8]) -> Result<String, String> {
    karoo::decoded_len(input, u64::MAX).map_err(|e| e.to_string())?;
    let (header, header_len) = Header::parse(input, u64::MAX).map_err(|e| e.to_string())?;
    if let Some(pipeline) = header.whole_pipeline() {
        return Ok(describe_brief(&header, header_len, pipeline.name(), input));
    }
    let mode = match header.mode {
        0 => "fast",
        _ => "archive",
    };
    // Each coding's tile count and payload bytes, in order of first use.
    let mut codings: Vec<(String, usize, usize)> = Vec::new();
    if !header.is_stored() {
        let mut at = header_len;
        if header.is_scaled() {
            let words = header.decoded_size / u64::from(header.word_size);
            let (_, len) = Scales::parse(&input[at..], words).map_err(|e| e.to_string())?;
            at += len;
        }
        let sizes = header
            .tile_sizes_in(input.len() - at)
            .map_err(|e| e.to_string())?;
        for size in sizes {
            let size = size as usize;
            let name = coding_name(&input[at..at + size]);
            at += size;
            match codings.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, count, bytes)) => {
                    *count += 1;
                    *bytes += size;
                }
                None => codings.push((name, 1, size)),
            }
        }
    }
    let shape: Vec<String> = header.decoded_shape().iter().map(u64::to_string).collect();
    let counts: Vec<String> = codings
        .iter()
        .map(|(name, count, _)| format!("\"{name}\": {count}"))
        .collect();
    let bytes: Vec<String> = codings
        .iter()
        .map(|(name, _, bytes)| format!("\"{name}\": {bytes}"))
        .collect();
    Ok(format!(
        "{{\"mode\": \"{mode}\", \"stored\": {}, \"word_size\": {}, \"shape\": [{}], \
         \"time_axis\": {}, \"lag\": {}, \"decoded_size\": {}, \"encoded_size\": {}, \
         \"tiles\": {}, \"codings\": {{{}}}, \"coding_bytes\": {{{}}}, \"scaled_integers\": {}, \
         \"narrowed_float64\": {}, \"planar_components\": {}, \"shifted_bits\": {}, \
         \"format_version\": \"{}\"}}",
        header.is_stored(),
        header.word_size,
        shape.join(", "),
        // The time axis of the decoded shape (planes have their components first).
        header.time_axis - u8::from(header.is_planar()),
        header.lag,
        header.decoded_size,
        input.len(),
        header.tile_sizes.len(),
        counts.join(", "),
        bytes.join(", "),
        header.is_scaled(),
        header.is_narrowed(),
        header.is_planar(),
        header.shift,
        format_version(input[4]),
    ))
}

/// A version byte as `major.minor` (docs/format.md, "Versions").
fn format_version(byte: u8) -> String {
    format!("{}.{}", byte & 15, byte >> 4)
}

/// The JSON description of a brief chunk (format version 4): no mode, time axis or tiles
/// recorded; the pipeline that codes it whole (its payload, after the `header_len`
/// header bytes, counted as that coding's bytes).
fn describe_brief(header: &Header, header_len: usize, pipeline: String, input: &[u8]) -> String {
    let shape: Vec<String> = header.decoded_shape().iter().map(u64::to_string).collect();
    let (codings, bytes) = if header.is_stored() {
        (String::new(), String::new())
    } else {
        (
            format!("\"{pipeline}\": 1"),
            format!("\"{pipeline}\": {}", input.len() - header_len),
        )
    };
    format!(
        "{{\"mode\": null, \"stored\": {}, \"pipeline\": \"{pipeline}\", \"word_size\": {}, \
         \"shape\": [{}], \"time_axis\": null, \"lag\": null, \"decoded_size\": {}, \
         \"encoded_size\": {}, \"tiles\": 0, \"codings\": {{{codings}}}, \
         \"coding_bytes\": {{{bytes}}}, \"scaled_integers\": false, \"narrowed_float64\": false, \
         \"planar_components\": false, \"shifted_bits\": 0, \"format_version\": \"{}\"}}",
        header.is_stored(),
        header.word_size,
        shape.join(", "),
        header.decoded_size,
        input.len(),
        format_version(input[4]),
    )
}

/// `predictor/map/coder` of a tile payload, from its two header bytes; `+spatial` when
/// the first row is predicted spatially.
fn coding_name(payload: &[u8]) -> String {
    let (Some(&p), Some(&mc)) = (payload.first(), payload.get(1)) else {
        return "empty".into();
    };
    let predictor = Predictor::from_id(u32::from(p & 0x7f)).map_or("?".into(), Predictor::name);
    let map = ResidualMap::from_id(u32::from(mc >> 4)).map_or("?", ResidualMap::name);
    let coder = Coder::from_id(u32::from(mc & 0x0f)).map_or("?", Coder::name);
    let spatial = if p & 0x80 != 0 { "+spatial" } else { "" };
    format!("{predictor}{spatial}/{map}/{coder}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(shape: &[u64]) -> KarooParams {
        KarooParams {
            word_size: 4,
            components: 2,
            element_class: 2,
            mode: 0,
            predictor: 0,
            residual_map: 0,
            coder: 0,
            threads: 1,
            time_axis: 0,
            rank: shape.len() as u32,
            lag: 0,
            shape: shape.as_ptr(),
            element_type: 5,
            level: 0,
        }
    }

    fn error_text(err: &[c_char]) -> String {
        let bytes: Vec<u8> = err
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8(bytes).unwrap()
    }

    /// The bytes of a live buffer, copied out with `karoo_buffer_copy`.
    ///
    /// # Safety
    /// `buffer` came from `karoo_compress` or `karoo_describe` and was not freed.
    unsafe fn copied(buffer: *const KarooBuffer) -> Vec<u8> {
        let mut err = [0 as c_char; 256];
        // SAFETY: the caller passes a live buffer.
        let mut bytes = vec![0u8; unsafe { karoo_buffer_len(buffer) }];
        // SAFETY: `bytes` holds the buffer's length of writable bytes of its own.
        let rc = unsafe {
            karoo_buffer_copy(
                buffer,
                bytes.as_mut_ptr(),
                bytes.len(),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        assert_eq!(rc, 0, "{}", error_text(&err));
        bytes
    }

    #[test]
    fn the_params_layout_tiles_the_structure_in_offset_order() {
        // SAFETY: karoo_params_layout returns a static NUL-terminated string.
        let text = unsafe { std::ffi::CStr::from_ptr(karoo_params_layout()) }
            .to_str()
            .unwrap();
        let mut lines = text.lines();
        let size = std::mem::size_of::<KarooParams>();
        assert_eq!(lines.next(), Some(size.to_string().as_str()));
        let mut end = 0;
        let mut names = Vec::new();
        for line in lines {
            let [name, kind, offset]: [&str; 3] =
                line.split(' ').collect::<Vec<_>>().try_into().unwrap();
            let offset: usize = offset.parse().unwrap();
            let width = match kind {
                "u32" => 4,
                "u64" => 8,
                "ptr" => std::mem::size_of::<*const u64>(),
                other => panic!("type {other}"),
            };
            assert!(
                offset >= end && offset.is_multiple_of(width) && offset - end < width,
                "{name} at {offset}: no gap but alignment padding after the field before"
            );
            end = offset + width;
            names.push(name);
        }
        assert_eq!(
            end.next_multiple_of(std::mem::align_of::<KarooParams>()),
            size
        );
        assert_eq!(names.len(), 14);
        assert_eq!(&names[..2], ["word_size", "components"]);
        assert_eq!(names.last(), Some(&"level"));
    }

    #[test]
    fn compress_then_decompress_through_the_c_abi_is_bit_exact() {
        let data: Vec<u8> = (0..16 * 8 * 2u32)
            .flat_map(|i| ((i / 16) as f32 * 0.5 + (i % 16) as f32).to_le_bytes())
            .collect();
        let shape = [16u64, 8, 2];
        let p = params(&shape);
        let mut err = [0 as c_char; 256];
        let mut buffer = std::ptr::null_mut();
        // SAFETY: every pointer refers to live locals of the right size.
        unsafe {
            let rc = karoo_compress(
                data.as_ptr(),
                data.len(),
                &p,
                &mut buffer,
                err.as_mut_ptr(),
                err.len(),
            );
            assert_eq!(rc, 0, "{}", error_text(&err));
            let chunk = copied(buffer);
            // A destination of any other length is refused, and nothing is written.
            let mut short = vec![7u8; chunk.len() - 1];
            let rc = karoo_buffer_copy(
                buffer,
                short.as_mut_ptr(),
                short.len(),
                err.as_mut_ptr(),
                err.len(),
            );
            assert_eq!(rc, -1);
            assert_eq!(
                error_text(&err),
                format!(
                    "karoo_buffer_copy was given {} bytes for a buffer of {}",
                    short.len(),
                    chunk.len()
                )
            );
            assert!(short.iter().all(|&b| b == 7));
            karoo_buffer_free(buffer);
            let mut n = 0u64;
            assert_eq!(
                karoo_decoded_len(
                    chunk.as_ptr(),
                    chunk.len(),
                    u64::MAX,
                    &mut n,
                    err.as_mut_ptr(),
                    err.len()
                ),
                0
            );
            assert_eq!(n as usize, data.len());
            let mut out = vec![0u8; data.len()];
            let rc = karoo_decompress_into(
                chunk.as_ptr(),
                chunk.len(),
                out.as_mut_ptr(),
                out.len(),
                1,
                err.as_mut_ptr(),
                err.len(),
            );
            assert_eq!(rc, 0, "{}", error_text(&err));
            assert_eq!(out, data);
            let mut json = std::ptr::null_mut();
            assert_eq!(
                karoo_describe(
                    chunk.as_ptr(),
                    chunk.len(),
                    &mut json,
                    err.as_mut_ptr(),
                    err.len()
                ),
                0
            );
            let text = String::from_utf8(copied(json)).unwrap();
            karoo_buffer_free(json);
            assert!(text.starts_with("{\"mode\": \"fast\", \"stored\": false, \"word_size\": 4, \"shape\": [16, 8, 2]"), "{text}");
        }
    }

    #[test]
    fn errors_come_back_as_messages() {
        let data = [0u8; 12];
        let shape = [4u64];
        let mut p = params(&shape);
        p.components = 1;
        p.predictor = 99;
        let mut err = [0 as c_char; 256];
        let mut buffer = std::ptr::null_mut();
        // SAFETY: every pointer refers to live locals of the right size.
        unsafe {
            assert_eq!(
                karoo_compress(
                    data.as_ptr(),
                    data.len(),
                    &p,
                    &mut buffer,
                    err.as_mut_ptr(),
                    err.len()
                ),
                -1
            );
            assert_eq!(error_text(&err), "karoo: unknown predictor 99");
            p.predictor = 0;
            assert_eq!(
                karoo_compress(
                    data.as_ptr(),
                    data.len(),
                    &p,
                    &mut buffer,
                    err.as_mut_ptr(),
                    err.len()
                ),
                -1
            );
            assert_eq!(
                error_text(&err),
                "karoo: invalid parameters: shape [4] holds 4 words but the buffer holds 3"
            );
            let mut out = [0u8; 4];
            assert_eq!(
                karoo_decompress_into(
                    b"nope".as_ptr(),
                    4,
                    out.as_mut_ptr(),
                    4,
                    1,
                    err.as_mut_ptr(),
                    err.len()
                ),
                -1
            );
            assert_eq!(
                error_text(&err),
                "karoo: not a karoo chunk (bad magic bytes)"
            );
            // A message longer than the buffer is cut, still NUL-terminated.
            let mut small = [1 as c_char; 8];
            assert_eq!(
                karoo_decompress_into(
                    b"nope".as_ptr(),
                    4,
                    out.as_mut_ptr(),
                    4,
                    1,
                    small.as_mut_ptr(),
                    small.len()
                ),
                -1
            );
            assert_eq!(error_text(&small), "karoo: ");
        }
    }
}
