#!/usr/bin/env bash
# scripts/deps.sh — install everything pg_idgen needs to build, test, run and
# benchmark on Debian bookworm. Idempotent: quick no-op when all is present.
#
# Usage: scripts/deps.sh            (as root, or as a user with sudo)
#
# Installs when missing:
#   apt:   postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
#          libclang-dev clang build-essential pkg-config libssl-dev curl
#          sudo faketime ca-certificates git   (pgbench ships with postgresql-15)
#   cargo: cargo-pgrx 0.18.1 (about 7 minutes to build)
#   pgrx:  `cargo pgrx init --pg15 /usr/lib/postgresql/15/bin/pg_config`
# Rust itself (rustup/cargo in ~/.cargo/bin) must already be installed.
set -euo pipefail

PGRX_VERSION=0.18.1
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '[deps] %s\n' "$*" >&2; }

SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

# --- apt packages ------------------------------------------------------------
APT_PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
          libclang-dev clang build-essential pkg-config libssl-dev curl
          sudo faketime ca-certificates git)
missing=()
for p in "${APT_PKGS[@]}"; do
    # "install ok installed" is the only state we accept as present
    if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
    log "apt packages: all present"
fi

# The Debian package creates a default cluster "15/main" and starts it on 5432.
# We never use it; it is harmless, but do not let it fail anything.

# --- rust toolchain -----------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
    log "ERROR: cargo not found (looked in PATH and ~/.cargo/bin). Install rustup first:"
    log "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal"
    exit 1
fi

# --- cargo-pgrx -----------------------------------------------------------------
have_pgrx=$(cargo pgrx --version 2>/dev/null || true)
if [ "$have_pgrx" != "cargo-pgrx $PGRX_VERSION" ]; then
    log "cargo install cargo-pgrx --version $PGRX_VERSION --locked  (found: '${have_pgrx:-none}'; takes ~7 min)"
    cargo install cargo-pgrx --version "$PGRX_VERSION" --locked
else
    log "cargo-pgrx $PGRX_VERSION: present"
fi

# --- cargo pgrx init (pg15 -> system PostgreSQL) -----------------------------------
PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
if ! grep -Eq "^pg15[[:space:]]*=[[:space:]]*\"$PG_CONFIG\"" "$PGRX_HOME/config.toml" 2>/dev/null; then
    log "cargo pgrx init --pg15 $PG_CONFIG"
    cargo pgrx init --pg15 "$PG_CONFIG"
else
    log "pgrx init: pg15 -> $PG_CONFIG already configured"
fi

# --- sanity --------------------------------------------------------------------------
[ -x "$PG_CONFIG" ] || { log "ERROR: $PG_CONFIG missing"; exit 1; }
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || log "WARNING: libfaketime.so.1 not found (clock tests will fail)"
id postgres >/dev/null 2>&1 || { log "ERROR: no 'postgres' OS user"; exit 1; }
log "ok"
