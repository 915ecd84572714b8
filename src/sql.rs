//! The hand-written SQL of the extension (`sql/`), in the order it appears in the install script
//! after the functions pgrx generates: the catalog trigger function, then per subsystem its
//! tables, views, triggers, privileges and comments.

use pgrx::prelude::*;

extension_sql_file!("../sql/catalog.sql", name = "catalog");
extension_sql_file!("../sql/regclass.sql", name = "regclass");
extension_sql_file!(
    "../sql/layouts.sql",
    name = "layouts",
    requires = ["catalog", layouts::uid_layout_register, layouts::uid_layout_drop]
);
extension_sql_file!(
    "../sql/worker.sql",
    name = "worker",
    requires = ["layouts", worker::set_worker_id, worker::clear_worker_id]
);
extension_sql_file!("../sql/decode.sql", name = "decode");
extension_sql_file!("../sql/lease.sql", name = "lease", requires = [lease::snowflake_lease]);
extension_sql_file!(
    "../sql/snowflake.sql",
    name = "snowflake",
    requires = [snowflake::snowflake_accept_layout, snowflake::snowflake_stats]
);
extension_sql_file!(
    "../sql/segment.sql",
    name = "segment",
    requires = [
        "regclass",
        segment::admin::segment_create_slotted,
        segment::admin::segment_drop,
        segment::status::segment_slot_status,
        segment::handover::segment_slot_release,
        segment::handover::segment_slot_adopt,
        segment::admin::segment_set,
        segment::status::segment_status_shmem,
        segment::status::segment_persisted
    ]
);
extension_sql_file!(
    "../sql/segment_registry.sql",
    name = "segment_registry",
    requires = ["segment", "lease"]
);
extension_sql_file!(
    "../sql/registry_nodes.sql",
    name = "registry_nodes",
    requires = ["segment_registry", "lease"]
);
extension_sql_file!(
    "../sql/mask.sql",
    name = "mask",
    requires = [
        "catalog",
        mask::admin::pg_idgen_mask_keys_guard,
        mask::admin::uid_mask_key_create,
        mask::admin::uid_mask_key_rotate,
        mask::admin::uid_mask_key_set_in_use,
        mask::admin::uid_mask_key_drop
    ]
);
extension_sql_file!(
    "../sql/keyed.sql",
    name = "keyed",
    requires = [
        "regclass",
        keyed::admin::keyed_create_fleet,
        keyed::admin::keyed_drop,
        keyed::admin::keyed_grant,
        keyed::admin::keyed_revoke,
        keyed::admin::keyed_set_node,
        keyed::next::keyed_status_shmem
    ]
);
extension_sql_file!("../sql/migrate.sql", name = "migrate", requires = ["segment"]);
extension_sql_file!(
    "../sql/monitor.sql",
    name = "monitor",
    requires = ["snowflake", "segment", "lease", decode::snowflake_layout, monitor::pg_idgen_worker_slots]
);
extension_sql_file!(
    "../sql/move.sql",
    name = "move",
    requires = [
        "segment",
        "keyed",
        "mask",
        "layouts",
        "worker",
        "snowflake",
        decode::snowflake_layout,
        snowflake::pg_idgen_snowflake_marks,
        snowflake::pg_idgen_snowflake_raise_floor,
        snowflake::pg_idgen_snowflake_claim_slots,
        keyed::admin::pg_idgen_keyed_raise_bounds
    ]
);
extension_sql_file!(
    "../sql/citus.sql",
    name = "citus",
    requires = ["segment", "keyed", worker::snowflake_worker_with_lease]
);
// Last (finalize): the guards of what must not replicate cover every table made above.
extension_sql_file!("../sql/replication.sql", name = "replication", finalize);
