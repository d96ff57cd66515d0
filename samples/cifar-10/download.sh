#!/usr/bin/env bash
# Downloads the CIFAR-10 "binary version" from its authors' page, checks its MD5 and unpacks it:
# <dir>/cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin and batches.meta.txt.
# Needs internet access (curl or wget). Usage: samples/cifar-10/download.sh [dir]
#   dir  where to put the archive and its files (default: samples/cifar-10/data)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$here/data}
url=https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz
md5=c32a1d4ab5d03f1284b67883e8d87530  # published on https://www.cs.toronto.edu/~kriz/cifar.html
mkdir -p "$dir"
cd "$dir"
archive=cifar-10-binary.tar.gz
if [ ! -s "$archive" ] || ! echo "$md5  $archive" | md5sum -c --status; then
  echo "downloading $url (about 162 MB)"
  if command -v curl >/dev/null; then
    curl -fL --retry 3 -o "$archive.part" "$url"
  elif command -v wget >/dev/null; then
    wget -O "$archive.part" "$url"
  else
    echo "download.sh: need curl or wget" >&2
    exit 1
  fi
  mv "$archive.part" "$archive"
fi
echo "$md5  $archive" | md5sum -c --status || {
  echo "download.sh: $dir/$archive: MD5 differs from $md5 (incomplete download?)" >&2
  exit 1
}
tar xzf "$archive"
echo "CIFAR-10 is in $(pwd)/cifar-10-batches-bin"
