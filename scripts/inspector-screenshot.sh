#!/usr/bin/env bash
# Regenerates docs/inspector.png: a real screenshot of the plugin inspector (`serve` at GET /),
# taken by headless Chromium with a demo runner loaded and a token entered. It runs the ignored
# browser test `screenshot_of_a_demo_runner` (tests/inspector.rs), which starts `serve` with the
# built-in example plugin, the Python demo plugin and a broken fixture on 127.0.0.1, connects,
# checks the broken plugin and tries `echo`.
#
# Needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver);
# CHROMIUM and CHROMEDRIVER override their paths.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in "${CHROMIUM:-chromium}" "${CHROMEDRIVER:-chromedriver}"; do
  command -v "$tool" >/dev/null || {
    echo "$tool not found: apt-get install -y chromium chromium-driver" >&2
    exit 2
  }
done
out="$PWD/docs/inspector.png"
INSPECTOR_SCREENSHOT="$out" cargo test --quiet --test inspector screenshot_of_a_demo_runner \
  -- --ignored --exact
echo "wrote $out"
