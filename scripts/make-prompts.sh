#!/usr/bin/env bash
# Regenerates the spoken voice prompts in assets/prompts/ from assets/prompts/prompts.txt, one
# `name|text` a line (blank lines and lines starting with # are skipped). Each prompt is spoken by
# espeak-ng in US English (at 22,050 Hz), then sox trims the silence at either end, pads ~100 ms back on
# each side, resamples to 16000 Hz 16-bit mono (wideband: the service makes its 8 kHz copies from these)
# and normalizes the peak to -3 dBFS. The WAV files are committed, so only whoever changes a prompt
# needs these tools (Debian: apt-get install espeak-ng sox).
set -euo pipefail
cd "$(dirname "$0")/../assets/prompts"

for tool in espeak-ng sox; do
  command -v "$tool" >/dev/null || { echo "make-prompts: $tool is missing (apt-get install -y espeak-ng sox)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

count=0
while IFS='|' read -r name text; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if [[ ! "$name" =~ ^[a-z0-9]+(-[a-z0-9]+)*$ || -z "$text" ]]; then
    echo "make-prompts: bad line (want kebab-case-name|text): $name|$text" >&2
    exit 1
  fi
  espeak-ng -v en-us -s 150 -w "$work/$name.wav" -- "$text"
  # -D: no dither, so the padding stays digital silence and a rerun gives the same bytes.
  # silence/reverse twice trims both ends at -45 dBFS; the first norm leaves headroom so the
  # resampler cannot clip, the second sets the final -3 dBFS peak.
  sox -D "$work/$name.wav" -r 16000 -c 1 -b 16 -e signed-integer "$name.wav" \
    silence 1 0.02 -45d reverse silence 1 0.02 -45d reverse \
    norm -6 rate -v 16000 norm -3 pad 0.1 0.1
  count=$((count + 1))
done <prompts.txt

echo "make-prompts: wrote $count prompts to assets/prompts/"
