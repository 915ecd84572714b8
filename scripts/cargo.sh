#!/bin/sh
# scripts/cargo.sh — cargo and cargo-pgrx as the Makefile and the scripts run them.
#
# Usage: scripts/cargo.sh SUBCOMMAND ARGS...   cargo SUBCOMMAND ARGS... (--ignore-rust-version added, see below)
#        scripts/cargo.sh pgrx ARGS...         cargo-pgrx (`cargo pgrx ARGS...`), every cargo it runs through here
#        scripts/cargo.sh pgrx-path            the path of that cargo-pgrx
#
# pgrx 0.19.4 declares `rust-version = "1.96"`; rustup's stable on the machines this project is
# built and tested on is 1.95, and pgrx 0.19.4 compiles with it (the extension, its clippy and its
# #[pg_test] build, checked on PostgreSQL 15). cargo refuses to build a package whose rust-version is above the compiler's
# unless it is given --ignore-rust-version, and no cargo configuration key or environment variable
# does the same. So this script adds that flag to the cargo commands that build (build, check,
# clippy, rustc, test, run, bench, doc, install). On a Rust >= 1.96 the flag changes nothing.
#
# cargo-pgrx runs cargo itself (`cargo metadata`, `cargo rustc`, `cargo test`), and #[pg_test]'s
# harness runs `cargo pgrx install --test` from inside `cargo test`. cargo-pgrx's `--cargo FLAG`
# passthrough hands FLAG to `cargo metadata` as well, which rejects --ignore-rust-version, so it
# cannot carry it. Instead, `scripts/cargo.sh pgrx` starts cargo-pgrx with CARGO (the cargo that
# cargo-pgrx runs) and CARGO_PGRX (the cargo-pgrx that the #[pg_test] harness runs) naming this
# script: every cargo of the build, at every level, passes through the case below.
#
# Which cargo-pgrx: $PG_IDGEN_CARGO_PGRX when set (a cargo-pgrx installed elsewhere, e.g. under
# its own `cargo install --root`), else `cargo-pgrx` on PATH (~/.cargo/bin, where scripts/deps.sh
# installs it). Which cargo: $PG_IDGEN_REAL_CARGO when set, else `cargo` on PATH.
set -eu

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
if [ -z "${PG_IDGEN_REAL_CARGO:-}" ]; then
    PG_IDGEN_REAL_CARGO=$(command -v cargo) || { echo "scripts/cargo.sh: cargo not found (install Rust with rustup first)" >&2; exit 127; }
    export PG_IDGEN_REAL_CARGO
fi

case "${1:-}" in
pgrx|pgrx-path)
    pgrx=${PG_IDGEN_CARGO_PGRX:-}
    if [ -z "$pgrx" ]; then
        pgrx=$(command -v cargo-pgrx) || { echo "scripts/cargo.sh: cargo-pgrx not found: make deps (or scripts/deps.sh) installs it" >&2; exit 127; }
    fi
    if [ "$1" = pgrx-path ]; then echo "$pgrx"; exit 0; fi
    # cargo-pgrx is called as cargo calls a subcommand: its first argument is "pgrx"
    CARGO=$self CARGO_PGRX=$self PG_IDGEN_CARGO_PGRX=$pgrx exec "$pgrx" "$@"
    ;;
build|b|check|c|clippy|rustc|test|t|run|r|bench|doc|d|install)
    sub=$1; shift
    exec "$PG_IDGEN_REAL_CARGO" "$sub" --ignore-rust-version "$@"
    ;;
*)
    exec "$PG_IDGEN_REAL_CARGO" "$@"
    ;;
esac
