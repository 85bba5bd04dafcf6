#!/usr/bin/env bash
# After a device call of .gpu/go.sh: put what came back in its place (development aid).
#   bash notes/tools/unpack_device_run.sh FILES_AT [DATE_TAG]
# FILES_AT: the folder the run's reply names (it holds rec.tgz, summary.txt, maybe nb.tgz).
# - the logs and the step summary go to notes/record_<DATE_TAG>/ (default: today's date);
# - the records (*.json) replace results/, but only when the run was on an H200 (go.sh writes
#   records only there; the summary's first steps say which);
# - nb.tgz (notebooks executed live) replaces book/*.ipynb;
# then it prints the git status, issue 26's bars (when the anyshape record changed) and the
# staircase re-render (scripts/render_staircase.py --records-changed).
set -euo pipefail
AT=${1:?FILES_AT}; TAG=${2:-$(date +%F)}
cd "$(dirname "$0")/../.."
DEST=notes/record_$TAG; mkdir -p "$DEST"
TMP=$(mktemp -d)
[ -f "$AT/rec.tgz" ] && tar xzf "$AT/rec.tgz" -C "$TMP"
[ -d "$TMP/logs" ] && cp "$TMP"/logs/*.log "$DEST"/ 2>/dev/null || true
[ -f "$AT/summary.txt" ] && cp "$AT/summary.txt" "$DEST/done"
echo "== steps"; cat "$DEST/done" 2>/dev/null || echo "(no summary)"
if ls "$TMP"/*.json >/dev/null 2>&1; then
  for f in "$TMP"/*.json; do
    gpu=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); p=d.get('provenance') or d.get('_meta', {}).get('provenance') or {}; print(p.get('gpu', '?'))" "$f")
    case $gpu in *H200*) cp "$f" results/ ;; *) echo "not copied (provenance gpu: $gpu): $(basename "$f")" ;; esac
  done
fi
if [ -f "$AT/nb.tgz" ]; then tar xzf "$AT/nb.tgz"; echo "== notebooks unpacked"; fi
rm -rf "$TMP"
echo "== git status"; git status --short
if git status --short results/ | grep -q anyshape; then
  echo "== issue 26's bars"; python3 notes/tools/check_bars_26.py
fi
if git status --short results/ | grep -q .; then
  echo "== staircase"; .venv/bin/python scripts/render_staircase.py --records-changed
fi
