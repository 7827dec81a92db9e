#!/usr/bin/env bash
# Writes the topology presets ShareLens ships (assets/topologies/): one file per sharing pattern at the demo's
# width with L = 12 layers and U = 4 unique blocks (Vanilla: 12, Universal: 1), so each pattern's shape shows;
# L = 12, U = 4 is Takase & Kiyono's own Cycle-Rev example (0 1 2 3 0 1 2 3 3 2 1 0). The demo pair's design
# (assets/topologies/demo.json) is written by hand and read by the app; these take their width from it.
#   tests/tools/make_topology_assets.sh [build/sharelens]
set -euo pipefail
sharelens=${1:-build/sharelens}
out=$(dirname "$0")/../../assets/topologies
# Every pattern `topology --preset` knows, as its usage lists them (core/topology_presets' kAllPatterns).
patterns=$("$sharelens" --help | sed -n 's/.*topology --preset \([a-z|-]*\) .*/\1/p' | head -1 | tr '|' ' ')
[ -n "$patterns" ] || { echo "make_topology_assets: no --preset list in '$sharelens --help'" >&2; exit 1; }
for pattern in $patterns; do
  case $pattern in
    vanilla) unique=12 ;;
    universal) unique=1 ;;
    *) unique=4 ;;
  esac
  "$sharelens" topology --preset "$pattern" --layers 12 --unique "$unique" --out "$out/$pattern.json" >/dev/null
  echo "wrote $out/$pattern.json"
done
