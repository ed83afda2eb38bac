#!/usr/bin/env bash
# fetch-corpus.sh - build peerpath's benchmark corpus from Debian packages.
#
# Usage: scripts/fetch-corpus.sh [--force] [--update-checksums] [DEST_DIR]
#
#   DEST_DIR            where the corpus goes (default: <repo>/data/corpus, git-ignored)
#   --force             rebuild even if the outputs exist (also replaces mismatching files)
#   --update-checksums  write the SHA-256 of freshly built outputs to data/corpus.sha256
#                       instead of verifying against it (maintainers only)
#
# Produces, from Debian bookworm's metastudent-data (BLAST protein databases of
# UniProtKB sequences; GPL-2+) converted with blastdbcmd from ncbi-blast+:
#
#   metastudent_MFO_goasp.fasta   FASTA, 80-column lines  (expected 205,110,033 B, 459,503 seqs)
#   metastudent_MFO_seqonly.txt   residues only, headers dropped, one sequence per line
#                                 (expected 170,940,655 B)
#   COPYRIGHT.metastudent-data    the package's copyright file (license of the data)
#
# Idempotent: if both outputs exist and match data/corpus.sha256 nothing is
# downloaded. Any checksum mismatch is a hard error (exit 1).
#
# Needs: apt-get (Debian 12), network access to a Debian mirror, ~1.2 GB of
# free space in DEST_DIR while building (the .deb plus the extracted BLAST DB).
# Installs ncbi-blast+ with apt-get if blastdbcmd is missing (root or sudo).
set -euo pipefail

METASTUDENT_PKG=metastudent-data
METASTUDENT_VERSION=${METASTUDENT_VERSION:-2.0.1-8}  # the version the checksums were recorded for
DB_REL=usr/share/metastudent-data/dataset_201401/MFO/goasp.fasta
FASTA=metastudent_MFO_goasp.fasta
SEQONLY=metastudent_MFO_seqonly.txt
EXPECTED_SEQS=459503
# The checksums in data/corpus.sha256 were recorded with these package versions:
RECORDED_WITH="metastudent-data 2.0.1-8, ncbi-blast+ 2.12.0+ds-3+b1 (blastdbcmd 2.12.0+), Debian 12"

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
SUMS_FILE=$REPO_ROOT/data/corpus.sha256

log() { printf '[fetch-corpus] %s\n' "$*" >&2; }
die() {
    printf '\n[fetch-corpus] ERROR: %s\n\n' "$*" >&2
    exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

force=0
update_sums=0
dest=""
while [ $# -gt 0 ]; do
    case $1 in
        --force) force=1 ;;
        --update-checksums) update_sums=1 ;;
        -h | --help) usage; exit 0 ;;
        -*) usage >&2; die "unknown option: $1" ;;
        *)
            [ -z "$dest" ] || die "only one DEST_DIR may be given"
            dest=$1
            ;;
    esac
    shift
done
dest=${dest:-$REPO_ROOT/data/corpus}
mkdir -p -- "$dest"
dest=$(cd -- "$dest" && pwd)

export LC_ALL=C

# --- helpers ----------------------------------------------------------------

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

apt_update_if_needed() {
    # Fresh containers ship without package lists.
    if ! apt-cache show "$1" >/dev/null 2>&1; then
        log "apt package lists do not know '$1'; running apt-get update"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    fi
}

# expected_sum NAME -> prints the recorded SHA-256 of NAME (empty if none)
expected_sum() {
    [ -f "$SUMS_FILE" ] || return 0
    awk -v n="$1" '$2 == n || $2 == "*" n { print $1; exit }' "$SUMS_FILE"
}

# check_file PATH NAME -> 0 if PATH's SHA-256 equals the recorded one for NAME
check_file() {
    local path=$1 name=$2 want got
    want=$(expected_sum "$name")
    [ -n "$want" ] || die "no checksum recorded for $name in $SUMS_FILE (maintainers: re-run with --update-checksums)"
    log "checking sha256 of $path ..."
    got=$(sha256sum -- "$path" | awk '{ print $1 }')
    if [ "$got" != "$want" ]; then
        log "sha256 MISMATCH for $path"
        log "  expected $want (from $SUMS_FILE)"
        log "  got      $got"
        return 1
    fi
    log "  ok $got"
}

size_of() { stat -c %s -- "$1"; }

# make_seqonly FASTA OUT: drop header lines, join each record's lines into one.
make_seqonly() {
    awk '/^>/ { if (n++) print s; s = ""; next }
         { s = s $0 }
         END { if (n) print s }' "$1" >"$2"
}

print_versions() {
    local blast_pkg blast_ver
    blast_pkg=$(dpkg-query -W -f='${Package} ${Version}' ncbi-blast+ 2>/dev/null || echo "ncbi-blast+ (not installed via dpkg)")
    blast_ver=$(blastdbcmd -version 2>/dev/null | head -n1 || true)
    log "versions: $METASTUDENT_PKG $1; $blast_pkg; ${blast_ver:-blastdbcmd not found}"
}

# --- 1. already there? -------------------------------------------------------

if [ "$force" -eq 0 ] && [ "$update_sums" -eq 0 ] && [ -f "$dest/$FASTA" ] && [ -f "$dest/$SEQONLY" ]; then
    log "found existing corpus in $dest"
    ok=1
    check_file "$dest/$FASTA" "$FASTA" || ok=0
    check_file "$dest/$SEQONLY" "$SEQONLY" || ok=0
    if [ "$ok" -eq 1 ]; then
        log "corpus up to date (checksums recorded with $RECORDED_WITH), nothing to do:"
        log "  $dest/$FASTA ($(size_of "$dest/$FASTA") bytes)"
        log "  $dest/$SEQONLY ($(size_of "$dest/$SEQONLY") bytes)"
        exit 0
    fi
    die "existing corpus files in $dest do not match $SUMS_FILE.
  They may be corrupt or from a different package version. Delete them or run
  '$0 --force${dest:+ $dest}' to rebuild them from the Debian packages."
fi

# Only the residues-only file missing, the FASTA good: derive it, no download.
if [ "$force" -eq 0 ] && [ "$update_sums" -eq 0 ] && [ -f "$dest/$FASTA" ] && [ ! -f "$dest/$SEQONLY" ]; then
    log "found $dest/$FASTA, $SEQONLY missing"
    check_file "$dest/$FASTA" "$FASTA" ||
        die "$dest/$FASTA does not match $SUMS_FILE; delete it or use --force"
    log "deriving $SEQONLY (headers dropped, one sequence per line) ..."
    make_seqonly "$dest/$FASTA" "$dest/$SEQONLY.tmp.$$"
    check_file "$dest/$SEQONLY.tmp.$$" "$SEQONLY" || {
        rm -f -- "$dest/$SEQONLY.tmp.$$"
        die "derived $SEQONLY does not match $SUMS_FILE"
    }
    mv -f -- "$dest/$SEQONLY.tmp.$$" "$dest/$SEQONLY"
    log "done: $dest/$SEQONLY ($(size_of "$dest/$SEQONLY") bytes)"
    exit 0
fi

if [ "$update_sums" -eq 0 ] && [ ! -f "$SUMS_FILE" ]; then
    die "$SUMS_FILE is missing; cannot verify the corpus (maintainers: use --update-checksums)"
fi

# --- 2. tools -----------------------------------------------------------------

command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script needs Debian 12 (bookworm) packages"
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found"

if ! command -v blastdbcmd >/dev/null 2>&1; then
    log "blastdbcmd missing: installing ncbi-blast+ with apt-get ..."
    apt_update_if_needed ncbi-blast+
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ncbi-blast+ >&2
    command -v blastdbcmd >/dev/null 2>&1 || die "ncbi-blast+ installed but blastdbcmd still not on PATH"
fi

# --- 3. download and extract metastudent-data (not installed) ------------------

work=$(mktemp -d "$dest/.fetch-corpus.XXXXXX")
cleanup() { rm -rf -- "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

apt_update_if_needed "$METASTUDENT_PKG"
log "downloading $METASTUDENT_PKG=$METASTUDENT_VERSION (~225 MB) with apt-get download ..."
# As root, apt's _apt sandbox user cannot write into our private temp dir; say
# so up front instead of getting apt's "Download is performed unsandboxed" warning.
sandbox=()
[ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
(cd -- "$work" && apt-get download -q "${sandbox[@]}" "$METASTUDENT_PKG=$METASTUDENT_VERSION" >&2) ||
    die "apt-get download $METASTUDENT_PKG=$METASTUDENT_VERSION failed (is a Debian bookworm mirror reachable?)"
deb=$(find "$work" -maxdepth 1 -name "${METASTUDENT_PKG}_*.deb" -print -quit)
[ -n "$deb" ] || die "apt-get download produced no .deb in $work"
deb_version=$(dpkg-deb -f "$deb" Version)
log "got $(basename -- "$deb") ($(size_of "$deb") bytes, sha256 $(sha256sum -- "$deb" | awk '{ print $1 }'))"
[ "$deb_version" = "$METASTUDENT_VERSION" ] ||
    die "downloaded $METASTUDENT_PKG $deb_version, expected $METASTUDENT_VERSION"

log "extracting (dpkg-deb -x, not installing) ..."
mkdir -p "$work/x"
dpkg-deb -x "$deb" "$work/x"
rm -f -- "$deb"
[ -f "$work/x/$DB_REL.pin" ] || die "BLAST database $DB_REL.* not found in the package"
cp -- "$work/x/usr/share/doc/$METASTUDENT_PKG/copyright" "$work/COPYRIGHT.metastudent-data"

print_versions "$deb_version"

# --- 4. convert ------------------------------------------------------------------

log "blastdbcmd -db .../$DB_REL -entry all -> $FASTA ..."
blastdbcmd -db "$work/x/$DB_REL" -entry all -out "$work/$FASTA"
rm -rf -- "$work/x"
seqs=$(grep -c '^>' "$work/$FASTA" || true)
log "  $(size_of "$work/$FASTA") bytes, $seqs sequences"
[ "$seqs" = "$EXPECTED_SEQS" ] || log "WARNING: expected $EXPECTED_SEQS sequences, got $seqs"

log "deriving $SEQONLY (headers dropped, one sequence per line) ..."
make_seqonly "$work/$FASTA" "$work/$SEQONLY"
log "  $(size_of "$work/$SEQONLY") bytes"

# --- 5. verify (or record) and move into place ------------------------------------

if [ "$update_sums" -eq 1 ]; then
    log "recording checksums in $SUMS_FILE"
    (cd -- "$work" && sha256sum -- "$FASTA" "$SEQONLY") >"$SUMS_FILE.tmp"
    mv -f -- "$SUMS_FILE.tmp" "$SUMS_FILE"
    cat -- "$SUMS_FILE" >&2
else
    ok=1
    check_file "$work/$FASTA" "$FASTA" || ok=0
    check_file "$work/$SEQONLY" "$SEQONLY" || ok=0
    [ "$ok" -eq 1 ] || die "the freshly built corpus does not match $SUMS_FILE.
  The Debian packages ($METASTUDENT_PKG $deb_version, $(dpkg-query -W -f='ncbi-blast+ ${Version}' ncbi-blast+ 2>/dev/null || echo 'ncbi-blast+ ?'))
  produced different bytes than the ones recorded with $RECORDED_WITH.
  Nothing was written to $dest."
fi

mv -f -- "$work/$FASTA" "$dest/$FASTA"
mv -f -- "$work/$SEQONLY" "$dest/$SEQONLY"
mv -f -- "$work/COPYRIGHT.metastudent-data" "$dest/COPYRIGHT.metastudent-data"
log "done:"
log "  $dest/$FASTA ($(size_of "$dest/$FASTA") bytes)"
log "  $dest/$SEQONLY ($(size_of "$dest/$SEQONLY") bytes)"
log "  $dest/COPYRIGHT.metastudent-data (license: GPL-2+, see file)"
