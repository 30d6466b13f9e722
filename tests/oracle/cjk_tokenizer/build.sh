#!/bin/sh
# Builds the test-only cjk_unicode61 FTS5 tokenizer next to this script (needs gcc and the SQLite
# development headers: Debian's libsqlite3-dev). Usage: tests/oracle/cjk_tokenizer/build.sh [out.so]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/libfts5_cjk.so"}
gcc -O2 -Wall -Wextra -fPIC -shared "$here/fts5_cjk_bigram.c" -o "$out"
echo "$out"
