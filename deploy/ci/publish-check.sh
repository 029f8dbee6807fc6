#!/bin/sh
# The catalogue's CI recipe for any CI system: check catalog-src, build it reproducibly, and say what
# the change means for buyers against the published version. deploy/ci/github-workflow.yml runs
# these same steps one by one (`publish-check.sh check`, `... build`, `... diff`); with no step
# named, all three run in order. Run it from the root of a checkout after `npm ci`.
#
#   check  npx lds check: every error at once; annotations on a GitHub pull request. Exits with
#          check's status (1 errors, 2 could not run): nothing is built.
#   build  npx lds build with SOURCE_DATE_EPOCH from the last commit (git log -1 --format=%ct), so
#          the same commit always gives the same dist/ and version.
#   diff   npx lds diff <published> <dist>: Markdown and JSON into $LDS_REPORT_DIR. A change buyers
#          see (diff exits 1) is reported, not a failure: the step exits 0 and writes
#          $LDS_REPORT_DIR/changed (true|false: anything a buyer sees) and review (true|false:
#          prices, licences, holds, releases or removed products, which a person should approve).
#
# Settings (environment):
#   LDS_SRC        catalog-src folder                       (default catalog-src)
#   LDS_OUT        where the build writes dist/             (default dist)
#   LDS_STORE_DIR  where the build writes the unit store    (default var/store)
#   LDS_PUBLISHED  the published version to compare with: an http(s) URL of its catalogue
#                  (<base_url>/lds/_catalog, fetched with curl), a saved catalogue file, or the dist/
#                  folder of a previous build artifact. Empty: first publication, no diff.
#   LDS_REPORT_DIR diff.md, diff.json, changed, review      (default ci-report)
#   LDS_CHECK_FORMAT  text, json or github                  (default github inside GitHub Actions, else text)
#   SOURCE_DATE_EPOCH the build clock                       (default: the last commit's time)
#   LDS            the command                              (default: npx --no -- lds)
set -eu

SRC=${LDS_SRC:-catalog-src}
OUT=${LDS_OUT:-dist}
STORE=${LDS_STORE_DIR:-var/store}
REPORT=${LDS_REPORT_DIR:-ci-report}
PUBLISHED=${LDS_PUBLISHED:-}
# --no: run this checkout's own lds (package.json bin) and never install a package of that name.
LDS=${LDS:-npx --no -- lds}
if [ -z "${LDS_CHECK_FORMAT:-}" ]; then
  if [ "${GITHUB_ACTIONS:-}" = true ]; then LDS_CHECK_FORMAT=github; else LDS_CHECK_FORMAT=text; fi
fi

say() { echo "publish-check: $*" >&2; }

step_check() {
  say "check $SRC ($LDS_CHECK_FORMAT)"
  # text is check's own default: the flag is only passed for the other forms.
  format=""
  [ "$LDS_CHECK_FORMAT" = text ] || format="--format $LDS_CHECK_FORMAT"
  status=0
  $LDS check --src "$SRC" $format || status=$?
  if [ "$status" -ne 0 ]; then
    say "check failed (exit $status): nothing is built"
    exit "$status"
  fi
}

step_build() {
  if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
  fi
  export SOURCE_DATE_EPOCH
  say "build $SRC -> $OUT and $STORE (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
  $LDS build --src "$SRC" --out "$OUT" --store-root "$STORE"
}

step_diff() {
  mkdir -p "$REPORT"
  if [ -z "$PUBLISHED" ]; then
    say "no published version given (LDS_PUBLISHED): first publication, nothing to compare"
    echo "No published version to compare with: this is the first publication." > "$REPORT/diff.md"
    echo false > "$REPORT/changed"
    echo false > "$REPORT/review"
    return 0
  fi
  old=$PUBLISHED
  case "$PUBLISHED" in
    http://* | https://*)
      old="$REPORT/published-catalog.json"
      say "fetch $PUBLISHED"
      curl -fsSL --retry 2 -o "$old" "$PUBLISHED"
      ;;
  esac
  status=0
  $LDS diff "$old" "$OUT" > "$REPORT/diff.md" || status=$?
  if [ "$status" -eq 0 ] || [ "$status" -eq 1 ]; then
    $LDS diff "$old" "$OUT" --format json > "$REPORT/diff.json" || true
  fi
  case "$status" in
    0) echo false > "$REPORT/changed"; say "no change a buyer sees" ;;
    1) echo true > "$REPORT/changed"; say "changes a buyer sees: $REPORT/diff.md (lds diff exited 1)" ;;
    *) say "lds diff could not run (exit $status)"; exit "$status" ;;
  esac
  # Prices, licences, holds, releases or removed products: a person approves them (diff.json "review").
  review=$(node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).review.join(", "))' "$REPORT/diff.json")
  if [ -n "$review" ]; then
    echo true > "$REPORT/review"
    say "needs review: $review"
  else
    echo false > "$REPORT/review"
  fi
  cat "$REPORT/diff.md"
}

case "${1:-all}" in
  check) step_check ;;
  build) step_build ;;
  diff) step_diff ;;
  all) step_check; step_build; step_diff ;;
  -h | --help) sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d'; exit 0 ;;
  *) say "unknown step '$1' (check, build, diff or all; --help)"; exit 2 ;;
esac
