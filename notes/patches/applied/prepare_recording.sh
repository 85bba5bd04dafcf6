#!/usr/bin/env bash
# Put everything that waits for an H200 record into one commit on a branch `rec` made from the
# current branch (main), check `rec` out, and print the commit's short sha (pass it as
# GEMM_BOOK_COMMIT). Main itself never holds the prepared state, so CI on main stays green if a
# session ends mid-call. Run from the repository root on a clean tree:
#   chapter 9's memory-bound step and launch dropdown (with graph replay), chapter 10's GEMV text
#   (undoing 3918b1f); FP8 rung 2's new defaults and controls, chapter 11's text
#   (fp8_rung2_defaults.patch); the padding rule for tile-multiple M and N (padding_edge_rule.patch).
# After the device calls: commit the records on `rec`; if the whole set landed, fast-forward main
# to `rec` (git checkout main && git merge --ff-only rec); if not, just `git checkout main`.
set -euo pipefail
test -z "$(git status --porcelain --untracked-files=no)" || { echo "tree not clean"; exit 1; }
git checkout -q -B rec
git revert --no-commit -X theirs 3918b1f      # where main has since edited the same lines, the prepared text wins
git apply notes/patches/fp8_rung2_defaults.patch
git apply notes/patches/padding_edge_rule.patch
git commit -q -a -m "On the page for the H200 record: chapter 9's memory-bound step and launch dropdown, chapter 10's GEMV text, FP8 rung 2's defaults (BN 192, scales through the ring) with its controls, padding only where M or N has an edge"
git rev-parse --short=12 HEAD
