//! `pg_idgen_sqlgen LIBRARY CONTROL VERSION OUT`: the extension's install script
//! (`pg_idgen--VERSION.sql`) from the schema pgrx embeds in the built library.
//!
//! pgrx's macros write every `#[pg_extern]`, `extension_sql!` and type into the library's
//! `.pgrxsc` section; `cargo pgrx schema` reads that section back, orders the entities by their
//! dependencies and renders SQL. This program does the same two steps with the same library
//! (`pgrx-sql-entity-graph`, pinned to pgrx's version), so that building and installing the
//! extension needs cargo alone, no cargo-pgrx. Nothing is kept in a file that could drift: the SQL
//! is made from the library it is installed with, and `make test-sql` checks that it equals what
//! `cargo pgrx schema` writes for the same code.

use std::path::Path;
use std::process::ExitCode;

use object::{Object, ObjectSection};
use pgrx_sql_entity_graph::section::{decode_entities, ELF_SECTION_NAME};
use pgrx_sql_entity_graph::{ControlFile, PgrxSql, SqlGraphEntity};

type Error = Box<dyn std::error::Error>;

/// The bytes of the `.pgrxsc` section of an ELF shared library.
fn schema_section(library: &[u8]) -> Result<&[u8], Error> {
    let file = object::File::parse(library)?;
    let section = file
        .section_by_name(ELF_SECTION_NAME)
        .ok_or("no .pgrxsc section: not a library built by pgrx 0.19 (or it was stripped)")?;
    Ok(section.data()?)
}

/// The install script of the extension whose library bytes, control file and version are given.
fn install_script(library: &[u8], control: &Path, version: &str, lib_name: &str) -> Result<String, Error> {
    let control_text = std::fs::read_to_string(control)
        .map_err(|e| format!("{}: {e}", control.display()))?;
    // a control file without module_pathname makes pgrx name the library with its version
    let versioned_so = !control_text.lines().any(|l| l.trim_start().starts_with("module_pathname"));
    let mut entities = vec![SqlGraphEntity::ExtensionRoot(ControlFile::from_path_with_cargo_version(
        control, version,
    )?)];
    entities.extend(decode_entities(schema_section(library)?)?);
    let sql = PgrxSql::build(entities.into_iter(), lib_name.to_string(), versioned_so)?;
    Ok(sql.to_sql()?)
}

fn run(args: &[String]) -> Result<(), Error> {
    let [library, control, version, out] = args else {
        return Err("usage: pg_idgen_sqlgen LIBRARY CONTROL VERSION OUT".into());
    };
    let bytes = std::fs::read(library).map_err(|e| format!("{library}: {e}"))?;
    let lib_name = Path::new(control)
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("the control file's name gives the extension's name")?;
    let sql = install_script(&bytes, Path::new(control), version, lib_name)?;
    // written next to the target and renamed: a reader never sees half a script
    let tmp = format!("{out}.tmp");
    std::fs::write(&tmp, sql).map_err(|e| format!("{tmp}: {e}"))?;
    std::fs::rename(&tmp, out).map_err(|e| format!("{out}: {e}"))?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pg_idgen_sqlgen: {e}");
            ExitCode::FAILURE
        }
    }
}
