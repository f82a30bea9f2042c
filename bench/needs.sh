# SPDX-License-Identifier: MIT
# Sourced by the bench scripts: installs (apt, Debian) what a script needs and the machine lacks.
# usage: bench_needs ITEM...   ITEM: a command name (its package has that
# name), or /path=package (a file that package provides).
bench_needs() {
  local need=() item
  for item in "$@"; do
    case "$item" in
      /*=*) [ -e "${item%%=*}" ] || need+=("${item#*=}") ;;
      *) command -v "$item" >/dev/null || need+=("$item") ;;
    esac
  done
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}
