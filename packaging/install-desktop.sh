#!/usr/bin/env bash
# Install the built app for the current user (Linux): the one-folder app, launchers on
# PATH, the desktop entry, the icon and the MIME types of .mgf/.msp/.mzML.
#
#   packaging/install-desktop.sh [APP_DIR]     # default APP_DIR: dist/simms-desktop
#
# Installs to ~/.local/opt/simms-desktop, ~/.local/bin/{simms-gui,simms} (symlinks),
# ~/.local/share/{applications,icons,mime}. Remove them to uninstall.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
APP="${1:-$ROOT/dist/simms-desktop}"
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
[[ -x "$APP/simms-gui" ]] || { echo "no built app in $APP: run packaging/build.sh" >&2; exit 1; }

mkdir -p "$HOME/.local/opt" "$HOME/.local/bin"
rm -rf "$HOME/.local/opt/simms-desktop"
cp -a "$APP" "$HOME/.local/opt/simms-desktop"
ln -sf "$HOME/.local/opt/simms-desktop/simms-gui" "$HOME/.local/bin/simms-gui"
ln -sf "$HOME/.local/opt/simms-desktop/simms" "$HOME/.local/bin/simms"

install -Dm644 "$ROOT/resources/icons/simms.png" "$DATA/icons/hicolor/256x256/apps/simms-desktop.png"
install -Dm644 "$ROOT/resources/icons/simms.svg" "$DATA/icons/hicolor/scalable/apps/simms-desktop.svg"
install -Dm644 "$ROOT/packaging/simms-mime.xml" "$DATA/mime/packages/simms-desktop.xml"
mkdir -p "$DATA/applications"
# Exec= must find simms-gui: use the absolute path in the installed copy
sed "s|^Exec=simms-gui|Exec=$HOME/.local/bin/simms-gui|; s|^TryExec=simms-gui|TryExec=$HOME/.local/bin/simms-gui|" \
    "$ROOT/packaging/simms-desktop.desktop" > "$DATA/applications/simms-desktop.desktop.tmp"
mv "$DATA/applications/simms-desktop.desktop.tmp" "$DATA/applications/simms-desktop.desktop"

command -v update-mime-database >/dev/null && update-mime-database "$DATA/mime" || true
command -v update-desktop-database >/dev/null && update-desktop-database "$DATA/applications" || true
command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$DATA/icons/hicolor" || true
echo "installed: $HOME/.local/bin/simms-gui, desktop entry $DATA/applications/simms-desktop.desktop"
