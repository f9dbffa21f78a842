#!/bin/sh
# Headless Chromium for the report render test (tests/trainers/test_report.py). Installed with apt-get
# when it is missing and this shell can (root on Debian/Ubuntu); otherwise say why and go on:
# the render test then skips with that reason. Never fails the test command by itself.
for name in chromium chromium-browser google-chrome; do
    command -v "$name" >/dev/null 2>&1 && exit 0
done
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_chromium: no chromium and no root apt-get here; the report render test will skip" >&2
    exit 0
fi
echo "ensure_chromium: installing chromium with apt-get (for the report render test)" >&2
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }; then
    echo "ensure_chromium: apt-get could not install chromium; the report render test will skip" >&2
fi
exit 0
