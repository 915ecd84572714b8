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
