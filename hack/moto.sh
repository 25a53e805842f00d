#!/usr/bin/env bash
# Makes sure the AWS emulator moto can run: the tests of test/moto,
# cloud/aws/fake (the contract test of the in-memory AWS) and cloud/aws
# start `python3 -m moto.server` on loopback. Without it they fail.
#
# moto is a Python package that Debian does not ship; it comes from PyPI
# (`pip install 'moto[server]'`, the server extras bring Flask). When python3
# cannot import it, this script tries that install once and fails, naming
# the missing package, if the import still fails (for example where PyPI
# cannot be reached).
#
# Usage: hack/moto.sh     # prints moto's version
set -euo pipefail

py=${PYTHON:-python3}
check() { "$py" -c 'import moto, moto.server; print(moto.__version__)' 2>/dev/null; }

if ! command -v "$py" >/dev/null 2>&1; then
  echo "hack/moto.sh: $py is not installed; the AWS emulator tests need python3 with the Python package moto (apt-get install python3 python3-pip, then pip install 'moto[server]')" >&2
  exit 1
fi
if check; then
  exit 0
fi
echo "hack/moto.sh: $py cannot import the Python package moto; installing moto[server] with pip" >&2
"$py" -m pip install --quiet --retries 0 --timeout 20 --break-system-packages 'moto[server]' >&2 ||
  "$py" -m pip install --quiet --retries 0 --timeout 20 'moto[server]' >&2 || true
if ! check; then
  echo "hack/moto.sh: the Python package moto (with its server extras) is missing and could not be installed: run pip install 'moto[server]' where PyPI can be reached; the AWS emulator tests (test/moto, cloud/aws/fake, cloud/aws) fail without it" >&2
  exit 1
fi
