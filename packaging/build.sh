#!/usr/bin/env bash
# Build the standalone one-folder SimMS desktop app with PyInstaller.
#
#   packaging/build.sh                 # -> dist/simms-desktop/{simms-gui,simms}
#
# On a fresh Linux machine (Python >= 3.11 with venv) this
#   1. creates a private build venv (build/venv; reused while pyproject.toml is unchanged),
#   2. installs the project (its runtime dependencies only) and PyInstaller into it,
#   3. runs `pyinstaller packaging/simms.spec`,
#   4. prints the build time and the size of dist/simms-desktop.
#
# Environment:
#   PYTHON=python3.12        interpreter for the build venv (default: python3)
#   SIMMS_BUILD_VENV=DIR     build venv location (default: build/venv)
#   SIMMS_BUILD_EXTRAS=cuda  also install the optional numba-cuda backend (bundled when present)
#   SIMMS_BUILD_FRESH=1      recreate the build venv from scratch
#
# The test-only packages (pytest, matchms, rdkit, pandas, matplotlib, torch, ...)
# are never installed into the build venv, and the spec excludes them anyway.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="${SIMMS_BUILD_VENV:-$ROOT/build/venv}"
EXTRAS="${SIMMS_BUILD_EXTRAS:-}"
PYINSTALLER_REQ="${SIMMS_PYINSTALLER:-pyinstaller>=6.10}"

start=$(date +%s)

if [[ "${SIMMS_BUILD_FRESH:-0}" == 1 ]]; then
    rm -rf "$VENV"
fi

# Reuse the build venv while the project's requirements are unchanged.
stamp="$(cat pyproject.toml; echo "$EXTRAS $PYINSTALLER_REQ")"
stamp="$(printf '%s' "$stamp" | sha256sum | cut -c1-16)"
if [[ ! -x "$VENV/bin/python" || "$(cat "$VENV/.simms-stamp" 2>/dev/null)" != "$stamp" ]]; then
    echo "== creating build venv $VENV"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    spec="."
    [[ -n "$EXTRAS" ]] && spec=".[$EXTRAS]"
    # a non-editable install of the project pulls its runtime dependencies; the
    # spec analyses the working tree's sources (pathex), so they are what ships
    "$VENV/bin/python" -m pip install --quiet "$spec" "$PYINSTALLER_REQ"
    # setuptools leaves these behind after building the wheel in-tree
    rm -rf "$ROOT/build/lib" "$ROOT/build/bdist."*
    echo "$stamp" > "$VENV/.simms-stamp"
else
    echo "== reusing build venv $VENV"
fi
"$VENV/bin/python" -m pip list --format=freeze 2>/dev/null \
    | grep -iE '^(pyinstaller|numba|numba-cuda|llvmlite|numpy|scipy|pyqt6|pyqtgraph|superqt|pyteomics)=' \
    | tr '\n' ' '
echo

echo "== pyinstaller packaging/simms.spec"
"$VENV/bin/python" -m PyInstaller --noconfirm --clean \
    --distpath "$ROOT/dist" --workpath "$ROOT/build/pyinstaller" \
    packaging/simms.spec

app="$ROOT/dist/simms-desktop"
[[ -x "$app/simms-gui" && -x "$app/simms" ]] || { echo "build FAILED: executables missing" >&2; exit 1; }

# Ship the kernels compiled: run each executable once with its numba cache inside the
# bundle (simms_gui/frozen.py copies it to the user's cache on a build's first start).
echo "== compiling the kernels into the bundle"
cache="$app/_internal/numba_cache"
rm -rf "$cache"
demo="$app/_internal/resources"
# an empty library cache, so the file readers' kernels run (and are cached) too
SIMMS_CACHE_DIR="$(mktemp -d)"
export SIMMS_CACHE_DIR
SIMMS_BUILD_KERNEL_CACHE="$cache/simms-gui" QT_QPA_PLATFORM=offscreen \
    "$app/simms-gui" --smoke-test
for mode in identity analog custom; do
    SIMMS_BUILD_KERNEL_CACHE="$cache/simms" "$app/simms" search \
        "$demo/demo_queries.mgf" "$demo/demo_library.mgf" --mode "$mode" \
        -o "$ROOT/build/kernel-cache-$mode.tsv" > /dev/null
done
for exe in simms-gui simms; do  # the stamp of this build: the shipped cache is copied once
    date -u +%Y%m%dT%H%M%S.%N > "$cache/$exe/BUILD"
done
rm -rf "$SIMMS_CACHE_DIR"
unset SIMMS_CACHE_DIR
echo "kernel cache: $(du -sh "$cache" | cut -f1)"

end=$(date +%s)
echo "== built $app"
echo "build time: $((end - start)) s"
echo "folder size: $(du -sh "$app" | cut -f1) ($(find "$app" -type f | wc -l) files)"
echo "try: $app/simms-gui --smoke-test"
