#!/usr/bin/env bash
# scripts/pg19root.sh — PostgreSQL 19 for pg_idgen: Debian experimental's server in a Debian sid
# root (a chroot), its programs reachable from the host through wrappers.
#
# PostgreSQL 19 exists only as Debian experimental's postgresql-19 / postgresql-server-dev-19 (no
# PyPI or npm build of it), and those need sid's glibc: they run inside a sid root, never on the
# host. This script makes that root once per machine and runs programs in it.
#
# Usage (as root):
#   scripts/pg19root.sh [ensure]       the root under $PG_IDGEN_PG_HOME/pg19 (made when missing,
#                                      ~5 min; a root without its stamp is made again), cargo-pgrx
#                                      and `cargo pgrx init --pg19` in it, the wrappers; prints the
#                                      PostgreSQL 19 build it holds
#   scripts/pg19root.sh version        that build (Debian's package version), e.g. 19~rc1-1
#   scripts/pg19root.sh exec [-u USER|--server] [--] PROG [ARGS...]
#                                      PROG inside the root, in the current directory (the same
#                                      path inside), after the binds below; -u USER: as USER;
#                                      --server: as postgres when called by root (server programs
#                                      refuse root), otherwise as the caller
#   scripts/pg19root.sh mount [PATH...]   the binds alone (idempotent)
#   scripts/pg19root.sh umount         every mount below the root, innermost first
#   scripts/pg19root.sh unbind PATH... the binds of PATH (and below it) alone, e.g. a clone about
#                                      to be deleted (.ci/run does so at its end)
#
# Layout ($PG_IDGEN_PG_HOME, default /var/cache/pg_idgen):
#   pg19/root/            the sid root (debootstrap --variant=minbase sid, deb.debian.org)
#   pg19/root.ok          the stamp: written last, holds the package versions; no stamp = no root
#   pg19/pg19root.sh      a copy of this script, which the wrappers run (so they do not depend
#                         on the checkout that made them)
#   pg19/bin/             wrappers (PGBIN for PG=19): postgres, pg_ctl, initdb, psql, pg_dump,
#                         pg_restore, pg_upgrade, pgbench, pg_basebackup, pg_regress ... each
#                         runs the root's program of the same name; pg_config answers the paths
#                         the host sees (<root>/usr/lib/postgresql/19/lib ...), --bindir this
#                         directory
#
# Inside the root: Acquire::Check-Valid-Until "false" (the registry's sid and experimental
# Release files are older than their validity); sources sid + experimental; postgresql-19 and
# postgresql-server-dev-19 from experimental (the major is pinned, not the build: the version
# moves, and `version` prints the one in use); sid's rustc, cargo, rustfmt, libclang-dev,
# build-essential (the extension is built in the root, against 19's headers), sudo (cargo pgrx
# test --runas), faketime (cluster.sh's fake clock preloads the same path inside); the user postgres with the host's uid and gid (made before the packages, so the
# packages take it); the CA bundle $SSL_CERT_FILE names copied to the same path (cargo reaches
# the crate registry); no cluster made by the packages, no service started.
#
# Binds (made by `exec` and `mount`, idempotent: a path already visible inside is left alone),
# each at the SAME path inside the root, so that a path means the same on both sides: /proc, /dev,
# /dev/shm, /dev/pts, /tmp, $PG_IDGEN_PG_HOME/pg15..pg18 (pg_upgrade's old binaries), and every path in
# $PG_IDGEN_PG19_BINDS (colon-separated; scripts/pgenv.bash puts the checkout and the cluster
# directory there, so a clean clone anywhere works).
set -euo pipefail

PG_IDGEN_PG_HOME=${PG_IDGEN_PG_HOME:-/var/cache/pg_idgen}
HOME19=$PG_IDGEN_PG_HOME/pg19
R=$HOME19/root
STAMP=$HOME19/root.ok
MIRROR=${PG_IDGEN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
MAJOR=19
PKGS_EXPERIMENTAL=(postgresql-$MAJOR postgresql-server-dev-$MAJOR)
PKGS_SID=(rustc cargo rustfmt libclang-dev build-essential sudo bash procps ca-certificates faketime)
# the wrapped programs; those in SERVER_PROGS run as postgres when the caller is root
PROGS=(postgres pg_ctl initdb psql pg_dump pg_dumpall pg_restore pg_upgrade pgbench pg_basebackup
       pg_controldata pg_resetwal pg_rewind pg_isready pg_receivewal pg_waldump pg_checksums
       createdb dropdb)
SERVER_PROGS=" postgres pg_ctl initdb pg_upgrade pg_controldata pg_resetwal pg_rewind pg_checksums "
LIBDIR=/usr/lib/postgresql/$MAJOR

log() { printf '[pg19root] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---- binds -------------------------------------------------------------------------------
# visible P: the root's P is the host's P already (same device and inode)
visible() { [ "$(stat -c %d:%i "$1" 2>/dev/null)" = "$(stat -c %d:%i "$R$1" 2>/dev/null)" ]; }
bind_one() {
    local p=$1
    [ -e "$p" ] || return 0
    p=$(readlink -f "$p")
    case $p in "$R"|"$R"/*) return 0 ;; esac
    visible "$p" && return 0
    # a host directory the root has its own of would hide the root's (its /usr, /etc, /root ...)
    case $p in /|/root|/usr|/usr/*|/etc|/etc/*|/var|/var/lib|/var/lib/*|/bin|/sbin|/lib|/lib64|/home|/opt|/srv|/run|"$HOME19"|"$PG_IDGEN_PG_HOME")
        die "will not bind $p into the root (it would hide the root's own)" ;;
    esac
    if [ -d "$p" ]; then mkdir -p "$R$p"; else mkdir -p "$(dirname "$R$p")"; : > "$R$p"; fi
    mount --bind "$p" "$R$p"
}
do_mount() {
    [ -f "$STAMP" ] || die "no PostgreSQL 19 root at $R (run: scripts/pg19root.sh ensure, or make deps)"
    [ "$(id -u)" -eq 0 ] || return 0      # binds need root: a non-root caller relies on those made before
    mountpoint -q "$R/proc" || mount -t proc proc "$R/proc"
    bind_one /dev
    bind_one /dev/shm
    bind_one /dev/pts
    bind_one /tmp
    local p
    for p in "$PG_IDGEN_PG_HOME"/pg1[5-8]; do bind_one "$p"; done
    local IFS=:
    for p in ${PG_IDGEN_PG19_BINDS:-} "$@"; do [ -n "$p" ] && bind_one "$p"; done
    return 0
}
do_umount() {
    [ -d "$R" ] || return 0
    local m
    # innermost first (mount points under the root, longest path first)
    for m in $(awk -v r="$R" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}

do_unbind() {
    [ -d "$R" ] || return 0
    local p m
    for p in "$@"; do
        p=$(readlink -f "$p" 2>/dev/null) || continue
        for m in $(awk -v r="$R$p" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
            umount -l "$m" 2>/dev/null || true
        done
    done
}

# ---- running a program in the root ----------------------------------------------------------
do_exec() {
    local user= server=0
    while [ $# -gt 0 ]; do
        case $1 in
            -u) user=$2; shift 2 ;;
            --server) server=1; shift ;;
            --) shift; break ;;
            *) break ;;
        esac
    done
    [ $# -gt 0 ] || die "exec: no program"
    do_mount
    local wd=$PWD
    [ -d "$R$wd" ] && visible "$wd" || wd=/
    # the host's toolchain and pgrx settings mean nothing inside: the root's own are used
    local envs=(env -u RUSTUP_HOME -u RUSTUP_TOOLCHAIN -u RUSTC -u RUSTDOC -u CARGO -u CARGO_PGRX -u PG_IDGEN_REAL_CARGO -u PG_IDGEN_CARGO_PGRX -u PGRX_HOME
                -u PG_CONFIG -u PGBIN -u PG_CLIENT_BIN -u PSQL -u PG_REGRESS -u PG_SHAREDIR -u PG_PKGLIBDIR
                -u LD_LIBRARY_PATH PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin)
    if [ "$(id -u)" -eq 0 ]; then
        [ -n "$user" ] || { [ $server = 1 ] && user=postgres; } || true
        if [ -n "$user" ] && [ "$user" != root ]; then
            local uid gid
            uid=$(chroot "$R" id -u "$user") gid=$(chroot "$R" id -g "$user")
            exec unshare --root="$R" --wd="$wd" --setgid="$gid" --setuid="$uid" \
                "${envs[@]}" HOME="$(chroot "$R" sh -c "getent passwd $user | cut -d: -f6")" USER="$user" "$@"
        fi
        exec unshare --root="$R" --wd="$wd" "${envs[@]}" "$@"
    fi
    # not root: a user namespace that maps only the caller (no privilege gained), chrooted there
    [ -z "$user" ] || [ "$user" = "$(id -un)" ] || die "exec -u $user: only root can switch users"
    exec unshare --user --map-current-user --root="$R" --wd="$wd" "${envs[@]}" "$@"
}

# ---- the wrappers -----------------------------------------------------------------------------
write_wrappers() {
    local bin=$HOME19/bin p tmp
    tmp=$(mktemp -d "$HOME19/bin.XXXX")
    for p in "${PROGS[@]}"; do
        [ -x "$R$LIBDIR/bin/$p" ] || continue
        local mode=
        case $SERVER_PROGS in *" $p "*) mode=--server ;; esac
        printf '#!/bin/bash\n# PostgreSQL %s'"'"'s %s, inside the sid root (scripts/pg19root.sh)\nexec %q exec %s -- %q "$@"\n' \
            "$MAJOR" "$p" "$HOME19/pg19root.sh" "$mode" "$LIBDIR/bin/$p" > "$tmp/$p"
    done
    # pg_regress lives in pgxs; it starts psql from --bindir (a path inside the root)
    printf '#!/bin/bash\nexec %q exec -- %q "$@"\n' "$HOME19/pg19root.sh" \
        "$LIBDIR/lib/pgxs/src/test/regress/pg_regress" > "$tmp/pg_regress"
    # pg_config: the host's view, written from the root's real one (the root changes only through
    # this script, which writes the wrappers again). --bindir is this directory; every other path
    # is the root's path seen from the host (<root>/usr/...), so install and package scripts copy
    # into the root
    {
        printf '#!/bin/bash\n# PostgreSQL %s'"'"'s pg_config as the host sees it (scripts/pg19root.sh); the\n' "$MAJOR"
        printf '# real one, for builds inside the root, is %s there\n' "$LIBDIR/bin/pg_config"
        printf 'all() {\ncat <<'"'"'PG19EOF'"'"'\n'
        chroot "$R" "$LIBDIR/bin/pg_config" | while IFS= read -r l; do
            local k=${l%% = *} v=${l#* = }
            case $k in BINDIR) echo "BINDIR = $bin" ;; *DIR|PGXS|INCLUDEDIR-SERVER) echo "$k = $R$v" ;; *) echo "$l" ;; esac
        done
        printf 'PG19EOF\n}\n'
        printf '[ $# -gt 0 ] || { all; exit 0; }\nfor a in "$@"; do\n    case $a in\n'
        local o k
        for o in bindir docdir htmldir includedir pkgincludedir includedir-server libdir pkglibdir localedir mandir sharedir sysconfdir pgxs \
                 configure cc cppflags cflags cflags_sl ldflags ldflags_ex ldflags_sl libs version; do
            k=${o^^}; k=${k//-/}
            case $o in includedir-server) k=INCLUDEDIR-SERVER ;; esac
            printf '        --%s) all | sed -n %q ;;\n' "$o" "s/^$k = //p"
        done
        printf '        *) echo "pg_config: invalid argument: $a" >&2; exit 1 ;;\n    esac\ndone\n'
    } > "$tmp/pg_config"
    chmod 755 "$tmp"/*
    chmod 755 "$tmp"
    rm -rf "$bin.old"; [ ! -d "$bin" ] || mv "$bin" "$bin.old"
    mv "$tmp" "$bin"; rm -rf "$bin.old"
}

pkg_version() { chroot "$R" dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }

# ---- making the root ----------------------------------------------------------------------------
make_root() {
    local t0=$SECONDS
    command -v debootstrap >/dev/null 2>&1 || {
        log "apt-get install debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null \
            || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap; }
    }
    if [ -e "$R" ]; then
        log "a PostgreSQL 19 root without its stamp (a run that did not finish): made again"
        do_umount
        rm -rf --one-file-system "$R"
    fi
    mkdir -p "$HOME19"; chmod 755 "$PG_IDGEN_PG_HOME" "$HOME19"
    log "debootstrap --variant=minbase sid $R $MIRROR (about 3 min)"
    debootstrap --variant=minbase sid "$R" "$MIRROR" > "$HOME19/debootstrap.log" 2>&1 \
        || { tail -20 "$HOME19/debootstrap.log" >&2; die "debootstrap failed (log: $HOME19/debootstrap.log)"; }
    log "debootstrap: $((SECONDS - t0)) s"
    echo 'Acquire::Check-Valid-Until "false";' > "$R/etc/apt/apt.conf.d/99pg_idgen-no-valid-until"
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > "$R/etc/apt/apt.conf.d/99pg_idgen-no-recommends"
    rm -f "$R/etc/apt/sources.list.d/"*
    printf 'deb %s sid main\ndeb %s experimental main\n' "$MIRROR" "$MIRROR" > "$R/etc/apt/sources.list"
    cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
    # no service starts in the root, no cluster is made by the packages
    printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d"; chmod 755 "$R/usr/sbin/policy-rc.d"
    mkdir -p "$R/etc/postgresql-common/createcluster.d"
    echo 'create_main_cluster = false' > "$R/etc/postgresql-common/createcluster.d/pg_idgen.conf"
    # the host's postgres uid and gid, before any package creates its own
    local uid gid
    uid=$(id -u postgres) gid=$(id -g postgres)
    chroot "$R" groupadd -g "$gid" postgres
    chroot "$R" useradd -u "$uid" -g "$gid" -d /var/lib/postgresql -s /bin/bash -r postgres
    mkdir -p "$R/var/lib/postgresql"; chroot "$R" chown postgres:postgres /var/lib/postgresql
    if [ -n "${SSL_CERT_FILE:-}" ] && [ -f "$SSL_CERT_FILE" ]; then
        mkdir -p "$R$(dirname "$SSL_CERT_FILE")"; cp "$SSL_CERT_FILE" "$R$SSL_CERT_FILE"
    fi
    mount -t proc proc "$R/proc"; bind_one /dev; bind_one /dev/shm
    local t1=$SECONDS
    log "apt-get install ${PKGS_SID[*]} (sid) and ${PKGS_EXPERIMENTAL[*]} (experimental)"
    chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get update -qq > "$HOME19/apt.log" 2>&1 \
        || { tail -20 "$HOME19/apt.log" >&2; die "apt-get update in the root failed"; }
    chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PKGS_SID[@]}" >> "$HOME19/apt.log" 2>&1 \
        || { tail -20 "$HOME19/apt.log" >&2; die "apt-get install (sid) in the root failed"; }
    chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t experimental "${PKGS_EXPERIMENTAL[@]}" >> "$HOME19/apt.log" 2>&1 \
        || { tail -20 "$HOME19/apt.log" >&2; die "apt-get install -t experimental in the root failed"; }
    chroot "$R" apt-get clean
    # the SSL bundle again: ca-certificates may have rewritten /etc/ssl/certs
    if [ -n "${SSL_CERT_FILE:-}" ] && [ -f "$SSL_CERT_FILE" ]; then cp "$SSL_CERT_FILE" "$R$SSL_CERT_FILE"; fi
    log "packages: $((SECONDS - t1)) s"
    [ -x "$R$LIBDIR/bin/postgres" ] || die "postgresql-$MAJOR did not install $LIBDIR/bin/postgres"
    { for p in "${PKGS_EXPERIMENTAL[@]}" rustc cargo libclang-dev; do echo "$p $(pkg_version "$p")"; done; } > "$STAMP.tmp"
    mv "$STAMP.tmp" "$STAMP"
    log "root made in $((SECONDS - t0)) s"
}

# cargo-pgrx in the root, the version the project's pgrx is: the host's binary when it is that
# version (it runs there: sid's glibc is newer than bookworm's), else cargo install in the root
ensure_cargo_pgrx() {
    grep -q '^pg19 = ' "$CHECKOUT/Cargo.toml" || { log "Cargo.toml has no pg19 feature (its pgrx cannot build for 19): no cargo-pgrx in the root"; return 0; }
    local want; want=$(sed -n 's/^pgrx = .*"=\{0,1\}\([0-9][0-9.]*\)".*/\1/p' "$CHECKOUT/Cargo.toml" | head -1)
    [ -n "$want" ] || { want=$(grep -m1 -o 'pgrx = { version = "=[0-9.]*' "$CHECKOUT/Cargo.toml" | grep -o '[0-9][0-9.]*$' || true); }
    [ -n "$want" ] || die "no pgrx version in $CHECKOUT/Cargo.toml"
    local have; have=$(chroot "$R" /usr/local/bin/cargo-pgrx pgrx --version 2>/dev/null || true)
    [ "$have" = "cargo-pgrx $want" ] && return 0
    local host=${PG_IDGEN_CARGO_PGRX:-}
    [ -n "$host" ] || host=$(PATH="$HOME/.cargo/bin:$PATH" command -v cargo-pgrx || true)
    if [ -n "$host" ] && [ "$("$host" pgrx --version 2>/dev/null)" = "cargo-pgrx $want" ]; then
        log "cargo-pgrx $want: the host's ($host)"
        install -m 755 "$host" "$R/usr/local/bin/cargo-pgrx"
    else
        log "cargo install cargo-pgrx --version $want --locked, in the root (~8 min)"
        chroot "$R" env -u CARGO_HOME -u RUSTUP_HOME -u RUSTUP_TOOLCHAIN HOME=/root PATH=/usr/local/bin:/usr/bin:/bin \
            cargo install cargo-pgrx --version "$want" --locked --root /usr/local
    fi
    have=$(chroot "$R" /usr/local/bin/cargo-pgrx pgrx --version 2>/dev/null || true)
    [ "$have" = "cargo-pgrx $want" ] || die "cargo-pgrx in the root: '$have', want $want"
}

# packages of the lists above that the root lacks (a list that grew since the root was made)
ensure_packages() {
    local p sid=() exp=()
    for p in "${PKGS_SID[@]}"; do [ -n "$(pkg_version "$p")" ] || sid+=("$p"); done
    for p in "${PKGS_EXPERIMENTAL[@]}"; do [ -n "$(pkg_version "$p")" ] || exp+=("$p"); done
    [ ${#sid[@]} -gt 0 ] || [ ${#exp[@]} -gt 0 ] || return 0
    log "apt-get install in the root: ${sid[*]} ${exp[*]}"
    chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    [ ${#sid[@]} -eq 0 ] || chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${sid[@]}"
    [ ${#exp[@]} -eq 0 ] || chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t experimental "${exp[@]}"
    chroot "$R" apt-get clean
}

do_ensure() {
    [ "$(id -u)" -eq 0 ] || die "run as root"
    if [ ! -f "$STAMP" ]; then make_root; fi
    mkdir -p "$HOME19"
    ensure_packages
    # the host's names (sudo looks its own host name up) and resolver
    cmp -s /etc/hosts "$R/etc/hosts" || cp /etc/hosts "$R/etc/hosts"
    cmp -s /etc/resolv.conf "$R/etc/resolv.conf" || cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
    # inside the root, the host's names of 19's programs and files are the real ones: the wrapper
    # directory is the root's bindir (pg_upgrade -B, pg_regress --bindir get the wrapper path) and
    # the root's own path is / (the host's view of its share and lib directories)
    mkdir -p "$R$HOME19" "$R$(dirname "$R")"
    [ -L "$R$HOME19/bin" ] || { rm -rf "$R$HOME19/bin"; ln -s "$LIBDIR/bin" "$R$HOME19/bin"; }
    [ -L "$R$R" ] || { rm -rf "$R$R"; ln -s / "$R$R"; }
    cmp -s "${BASH_SOURCE[0]}" "$HOME19/pg19root.sh" || install -m 755 "${BASH_SOURCE[0]}" "$HOME19/pg19root.sh"
    [ -x "$HOME19/bin/pg_config" ] && [ "$HOME19/bin/pg_config" -nt "$HOME19/pg19root.sh" ] \
        && [ "$HOME19/bin/pg_config" -nt "$STAMP" ] && [ "$HOME19/bin/pg_config" -nt "$R/var/lib/dpkg/status" ] || write_wrappers
    do_mount
    ensure_cargo_pgrx
    # pgrx's configuration in the root (its /root/.pgrx): the root's real pg_config
    [ ! -x "$R/usr/local/bin/cargo-pgrx" ] || grep -qs "^pg$MAJOR = \"$LIBDIR/bin/pg_config\"" "$R/root/.pgrx/config.toml" \
        || chroot "$R" env HOME=/root PATH=/usr/local/bin:/usr/bin:/bin cargo pgrx init --pg$MAJOR "$LIBDIR/bin/pg_config" >/dev/null
    log "PostgreSQL $MAJOR: Debian experimental postgresql-$MAJOR $(pkg_version postgresql-$MAJOR) ($("$HOME19/bin/pg_config" --version)) in $R"
}

CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-ensure} in
    ensure) do_ensure ;;
    version) [ -f "$STAMP" ] || die "no root"; pkg_version postgresql-$MAJOR; echo ;;
    exec) shift; do_exec "$@" ;;
    mount) shift; do_mount "$@" ;;
    umount) do_umount ;;
    unbind) shift; do_unbind "$@" ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
