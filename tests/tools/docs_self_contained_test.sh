#!/bin/sh
# The repository describes itself: no document, source or test links to the design inputs outside
# it (../shared/...). Prints every offending line and fails when there is one.
set -u
root=${1:?usage: docs_self_contained_test.sh SOURCE_DIR}
cd "$root" || exit 2
hits=$(grep -rnI --exclude-dir=.git --exclude-dir='build*' -e '\.\./shared/' -e '/work/shared/' \
  README.md docs policies examples tests tools scripts runtime compiler simulator server \
  kubernetes cli stdlib packs 2>/dev/null | grep -v '^tests/tools/docs_self_contained_test.sh:')
if [ -n "$hits" ]; then
  echo "links outside the repository:"
  echo "$hits"
  exit 1
fi
echo "no links outside the repository"
