//! `PG_FUNCTION_INFO_V1` for the plain C functions (not `#[pg_extern]`): the `pg_finfo_<symbol>`
//! function PostgreSQL looks up beside `<symbol>` to learn it uses the version-1 calling
//! convention. Used as `crate::fmgr::pg_function_info_v1!(pg_finfo_<symbol>)`.

macro_rules! pg_function_info_v1 {
    ($finfo:ident) => {
        #[unsafe(no_mangle)]
        #[doc(hidden)]
        pub extern "C" fn $finfo() -> &'static ::pgrx::pg_sys::Pg_finfo_record {
            const V1: ::pgrx::pg_sys::Pg_finfo_record = ::pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
            &V1
        }
    };
}
pub(crate) use pg_function_info_v1;

/// `palloc` without pgrx's FFI guard (a sigsetjmp per call): it raises only out of memory, and
/// its callers here hold nothing that needs dropping when it does.
mod raw {
    unsafe extern "C" {
        #[link_name = "palloc"]
        pub fn palloc(size: usize) -> *mut std::ffi::c_void;
    }
}

/// A `text` datum holding `bytes` (valid UTF-8, no NUL), palloc'd in the current memory context.
///
/// # Safety
/// Called in a backend, from a function PostgreSQL called (a current memory context exists).
pub unsafe fn text_from_bytes(bytes: &[u8]) -> *mut ::pgrx::pg_sys::varlena {
    let total = ::pgrx::pg_sys::VARHDRSZ + bytes.len();
    // SAFETY: palloc returns at least `total` bytes, MAXALIGNed, or raises; the header is a
    // 4-byte varlena header of the total length, then the bytes.
    unsafe {
        let p = raw::palloc(total).cast::<::pgrx::pg_sys::varlena>();
        ::pgrx::varlena::set_varsize_4b(p, total as i32);
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            p.cast::<u8>().add(::pgrx::pg_sys::VARHDRSZ),
            bytes.len(),
        );
        p
    }
}
