#!/bin/sh
# Run the Python interpreter of the test run as the unprivileged user `nobody`: root bypasses file
# permissions, so permission faults are only real for another user.
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$RETRACE_REAL_PYTHON" "$@"
