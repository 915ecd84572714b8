//! `keyed_next(space, key)`, `keyed_next(space, key, n)` and `keyed_last(space, key)`: the
//! cache of keys' current values and sections' floors (see the protocol in `table`).

use std::sync::atomic::Ordering;

use pg_idgen_core::keyed::{
    bucket_of, choose_victim, partition_of, section_of, set_of, take, validate_count, Take, Way,
};
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::space::{authorize, check_writable, raise_bound, resolve, validate_name, Resolved};
use super::table::{
    set_slots, sets, slot_live, space, tick, Held, Slot, KIND_KEY, KIND_SECTION, PARTITIONS, WAYS,
};
use crate::errors::{raise, Code};

fn find(slots: &[Slot], kind: u8, res: &Resolved, id: i64) -> Option<usize> {
    slots.iter().position(|s| s.kind == kind && s.gen == res.gen && s.space as usize == res.idx && s.id == id)
}

/// Under partition `part`'s lock: the index in `set` of a new slot, after moving whatever it
/// held out of the cache. An evicted key raises its section's floor to its value (or, with its
/// section not cached, its bucket's floor); an evicted section raises its bucket's floor.
fn make_room(part: usize, set: usize) -> usize {
    let victim = {
        let slots = set_slots(part, set);
        let mut ways = [Way::Free; WAYS];
        for (w, s) in ways.iter_mut().zip(slots.iter()) {
            if slot_live(s) {
                *w = Way::Used { tick: s.tick };
            }
        }
        let i = choose_victim(&ways).unwrap_or(0);
        (i, matches!(ways[i], Way::Used { .. }).then_some(slots[i]))
    };
    if let (_, Some(old)) = victim {
        let sp = space(old.space as usize);
        if old.kind == KIND_KEY {
            let sset = set_of(old.gen, old.sec, true, sets());
            let slots = set_slots(part, sset);
            match slots.iter_mut().find(|s| {
                s.kind == KIND_SECTION && s.gen == old.gen && s.space == old.space && s.id == old.sec
            }) {
                Some(sec) => sec.val = sec.val.max(old.val),
                None => {
                    sp.floors[bucket_of(old.sec)].fetch_max(old.val, Ordering::AcqRel);
                }
            }
        } else {
            sp.floors[bucket_of(old.id)].fetch_max(old.val, Ordering::AcqRel);
        }
    }
    victim.0
}

/// Under partition `part`'s lock: (set, way) of the key's slot, loaded from its section's
/// floor (or its bucket's) if it was not cached.
///
/// The invariant: every key that is not cached has handed out nothing above its section's
/// floor, or, with its section not cached, above its bucket's floor. A section slot is therefore
/// made room for *before* the bucket's floor is read into it: the eviction may move a key of that
/// very section (cached while its section was not) into the bucket's floor, and a floor read
/// earlier would give the new section slot less than that key handed out.
fn key_slot(part: usize, res: &Resolved, key: i64, sec: i64) -> (usize, usize) {
    let nsets = sets();
    let kset = set_of(res.gen, key, false, nsets);
    if let Some(w) = find(set_slots(part, kset), KIND_KEY, res, key) {
        return (kset, w);
    }
    let sset = set_of(res.gen, sec, true, nsets);
    let floor = match find(set_slots(part, sset), KIND_SECTION, res, sec) {
        Some(w) => set_slots(part, sset)[w].val,
        None => {
            let w = make_room(part, sset);
            let floor = space(res.idx).floors[bucket_of(sec)].load(Ordering::Acquire);
            set_slots(part, sset)[w] = Slot {
                kind: KIND_SECTION,
                space: res.idx as u32,
                gen: res.gen,
                id: sec,
                sec,
                val: floor,
                tick: tick(part),
            };
            floor
        }
    };
    // The key's floor is read: evicting a key of its section now raises that section's floor,
    // evicting the section itself the bucket's, and neither concerns this key's past values.
    let w = make_room(part, kset);
    set_slots(part, kset)[w] = Slot {
        kind: KIND_KEY,
        space: res.idx as u32,
        gen: res.gen,
        id: key,
        sec,
        val: floor,
        tick: tick(part),
    };
    (kset, w)
}

enum Outcome {
    Issued(i64),
    Raise(i64),
    Exhausted,
    Stale,
}

/// Takes `n` values of `key` (1 <= n <= step): returns the last of them.
fn next_n(name: &[u8], key: i64, n: i64) -> i64 {
    check_writable();
    loop {
        // Each round either hands out, or follows a raise or a release by another backend.
        pg_sys::check_for_interrupts!();
        let res = resolve(name);
        authorize(name, &res);
        if let Err(msg) = validate_count(n, res.step) {
            raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, msg, None);
        }
        let sec = section_of(key, res.section_size);
        let part = partition_of(res.gen, sec, PARTITIONS);
        let outcome = {
            let _g = Held::partition(part);
            if !res.still_valid() {
                Outcome::Stale
            } else {
                let (set, w) = key_slot(part, &res, key, sec);
                let t = tick(part);
                let slot = &mut set_slots(part, set)[w];
                slot.tick = t;
                let bound = space(res.idx).bounds[bucket_of(sec)].load(Ordering::Acquire);
                match take(slot.val, n, bound, res.stride.limit) {
                    // The entry may have been released or claimed again since the check above
                    // (that takes the spaces lock, not this one), and the floor or bound just
                    // read may be the new generation's: a claim publishes its generation before
                    // either, so this second check sees it, whatever `take` concluded.
                    _ if !res.still_valid() => Outcome::Stale,
                    Take::Issue { last } => {
                        slot.val = last;
                        // the counter's value: itself in plain mode, c * nodes + index in fleet mode
                        Outcome::Issued(res.stride.value(last))
                    }
                    Take::Raise { need } => Outcome::Raise(need),
                    Take::Exhausted => Outcome::Exhausted,
                }
            }
        };
        match outcome {
            Outcome::Issued(v) => return v,
            Outcome::Raise(need) => raise_bound(&res, validate_name(name), bucket_of(sec), need),
            Outcome::Stale => super::space::forget(name),
            Outcome::Exhausted => raise(
                Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!("keyed sequence of key {key} in space \"{}\" is exhausted", validate_name(name)),
                Some("Its next value would not fit in a bigint."),
            ),
        }
    }
}

/// The key's current value without consuming one: every value handed out for it is at most
/// this, and its next value is above it. Exact while the key is cached; otherwise the floor
/// it would continue from (its section's, or its bucket's).
fn last(name: &[u8], key: i64) -> i64 {
    // SAFETY: a flag of this backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        // A standby claims no entry (its state would be stale after promotion): the key's bucket's
        // durable bound as replayed.
        let name = validate_name(name);
        let cfg = {
            let _su = crate::catalog::RunAs::superuser();
            super::space::read_config(name)
        };
        let Some(cfg) = cfg else { super::space::unknown_space(name) };
        super::space::check_usage(name, cfg.seqoid);
        let bucket = bucket_of(section_of(key, cfg.section_size));
        let _su = crate::catalog::RunAs::superuser();
        let bound =
            super::bounds::read_one(name, bucket).unwrap_or_else(|| super::space::missing_bounds(name));
        return cfg.stride.last_value(bound);
    }
    loop {
        pg_sys::check_for_interrupts!();
        let res = resolve(name);
        authorize(name, &res);
        let sec = section_of(key, res.section_size);
        let part = partition_of(res.gen, sec, PARTITIONS);
        let _g = Held::partition(part);
        if !res.still_valid() {
            drop(_g);
            super::space::forget(name);
            continue;
        }
        let nsets = sets();
        let kset = set_of(res.gen, key, false, nsets);
        let c = if let Some(w) = find(set_slots(part, kset), KIND_KEY, &res, key) {
            set_slots(part, kset)[w].val
        } else {
            let sset = set_of(res.gen, sec, true, nsets);
            match find(set_slots(part, sset), KIND_SECTION, &res, sec) {
                Some(w) => set_slots(part, sset)[w].val,
                None => space(res.idx).floors[bucket_of(sec)].load(Ordering::Acquire),
            }
        };
        drop(_g);
        return res.stride.last_value(c);
    }
}

/// Argument `i`, named `name`, which must not be NULL (the functions are not STRICT: a NULL
/// space, key or count is an error, 22004, not a NULL value).
unsafe fn arg(fcinfo: pg_sys::FunctionCallInfo, i: usize, name: &str) -> pg_sys::Datum {
    // SAFETY: the caller's frame has at least i + 1 arguments.
    let a = unsafe { (*fcinfo).args.as_slice(i + 1)[i] };
    if a.isnull {
        raise(Code::ERRCODE_NULL_VALUE_NOT_ALLOWED, format!("argument \"{name}\" must not be NULL"), None);
    }
    a.value
}

/// The bytes of the text argument `i`.
unsafe fn arg_text<'a>(fcinfo: pg_sys::FunctionCallInfo, i: usize) -> &'a [u8] {
    // SAFETY: argument i is a non-NULL text (checked by `arg`).
    unsafe { crate::segment::text_bytes(arg(fcinfo, i, "space")) }
}

unsafe fn arg_i64(fcinfo: pg_sys::FunctionCallInfo, i: usize) -> i64 {
    // SAFETY: argument i is a non-NULL bigint (by value on 64-bit platforms).
    unsafe { arg(fcinfo, i, "key").value() as i64 }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_keyed_next);

/// `keyed_next(space text, key bigint) RETURNS bigint`: the key's next value, increasing
/// per (space, key) across every backend of the instance. A plain V1 function (no pgrx argument
/// conversion on the hot path).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_keyed_next(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: PostgreSQL's frame for a (text, bigint) function.
    unsafe { pg_sys::Datum::from(next_n(arg_text(fcinfo, 0), arg_i64(fcinfo, 1), 1)) }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_keyed_next_n);

/// `keyed_next(space text, key bigint, n int) RETURNS bigint`: reserves the key's next
/// `n` values (1 <= n <= the space's step) and returns the last of them; the caller owns
/// `result - n + 1 .. result`.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_keyed_next_n(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: PostgreSQL's frame for a (text, bigint, int) function.
    unsafe {
        let n = arg(fcinfo, 2, "n").value() as i32 as i64;
        pg_sys::Datum::from(next_n(arg_text(fcinfo, 0), arg_i64(fcinfo, 1), n))
    }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_keyed_last);

/// `keyed_last(space text, key bigint) RETURNS bigint`: see [`last`].
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_keyed_last(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: PostgreSQL's frame for a (text, bigint) function.
    unsafe { pg_sys::Datum::from(last(arg_text(fcinfo, 0), arg_i64(fcinfo, 1))) }
}

/// Per space of this database in shared memory: its highest bucket bound and floor, and its
/// bound raises since its entry was claimed.
#[pg_extern(volatile, parallel_restricted)]
fn keyed_status_shmem(
) -> TableIterator<'static, (name!(space, String), name!(bound, i64), name!(floor, i64), name!(raises, i64))>
{
    use super::table::{MAX_NAME_BYTES, MAX_SPACES};
    // copied under the lock into memory allocated before it, converted after
    let mut raw = vec![(false, [0u8; MAX_NAME_BYTES], 0usize, 0i64, 0i64, 0i64); MAX_SPACES];
    if !super::table::header_or_null().is_null() {
        let db = super::table::my_db();
        let _g = Held::spaces();
        for (i, r) in raw.iter_mut().enumerate() {
            let s = space(i);
            if s.in_use && s.dbid == db {
                *r = (
                    true,
                    s.name,
                    s.name_len,
                    s.bounds.iter().map(|b| b.load(Ordering::Acquire)).max().unwrap_or(0),
                    s.floors.iter().map(|b| b.load(Ordering::Acquire)).max().unwrap_or(0),
                    s.raises.load(Ordering::Relaxed),
                );
            }
        }
    }
    let rows: Vec<_> = raw
        .into_iter()
        .filter(|r| r.0)
        .map(|(_, name, len, bound, floor, raises)| {
            (String::from_utf8_lossy(&name[..len]).into_owned(), bound, floor, raises)
        })
        .collect();
    TableIterator::new(rows)
}
