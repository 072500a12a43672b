#!/usr/bin/env bash
# Runs a command as an unprivileged user, as kgym runs on a machine where it is not root: the
# user `kgym-unprivileged` (made if missing), no capabilities, its own TMPDIR, in its home. Root's Python
# (pyenv under /root, mode 700) stays reachable at the same path: in a mount namespace of
# the command's own, /root becomes an empty tmpfs the user may pass through, with the Python
# bind-mounted back. Must start as root; nothing outside the namespace changes but the user.
set -euo pipefail
# Exit 77 (a skip, for CTest) when not started as root.
[ "$(id -u)" = 0 ] || { echo "run_as_user.sh: start it as root (it drops to kgym-unprivileged); skipped" >&2; exit 77; }
user=kgym-unprivileged
id -u "$user" >/dev/null 2>&1 || useradd --system --create-home --shell /usr/sbin/nologin "$user"
home=$(getent passwd "$user" | cut -d: -f6)
mkdir -p "$home" && chown "$user" "$home"
python_root=$(python3 -c 'import sys; print(sys.base_prefix)')
tmp=$(mktemp -d /tmp/kgym-unprivileged.XXXXXX)
chown "$user" "$tmp"
export KGYM_UNPRIVILEGED_TMP="$tmp" KGYM_UNPRIVILEGED_HOME="$home" KGYM_UNPRIVILEGED_PYTHON="$python_root" KGYM_UNPRIVILEGED_USER="$user"
status=0
unshare --mount --propagation private -- bash -euo pipefail -c '
  case "$KGYM_UNPRIVILEGED_PYTHON" in
    /root/*)  # reachable again: a passable /root holding only the Python
      rest=${KGYM_UNPRIVILEGED_PYTHON#/root/}; top=/root/${rest%%/*}
      keep=$(mktemp -d "$KGYM_UNPRIVILEGED_TMP/python.XXXXXX")
      mount --bind "$top" "$keep"
      mount -t tmpfs -o mode=0711 kgym-root /root
      mkdir -p "$top" && mount --move "$keep" "$top"
      export PATH="$KGYM_UNPRIVILEGED_PYTHON/bin:$PATH" ;;
  esac
  export TMPDIR="$KGYM_UNPRIVILEGED_TMP" HOME="$KGYM_UNPRIVILEGED_HOME"
  cd "$HOME"
  exec setpriv --reuid="$KGYM_UNPRIVILEGED_USER" --regid="$KGYM_UNPRIVILEGED_USER" --init-groups \
    --inh-caps=-all --bounding-set=-all -- "$@"
' run_as_user "$@" || status=$?
rm -rf "$tmp"  # what the command left in its TMPDIR
exit "$status"
