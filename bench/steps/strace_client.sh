#!/bin/sh
# strace_client.sh OUT CMD...: run CMD in a vmtest guest under the host's
# strace, copied with its libraries into the share's strace/ folder (the
# guest image has no strace); the trace goes to /host/OUT.
out=$1; shift
exec /host/strace/ld-linux-x86-64.so.2 --library-path /host/strace /host/strace/strace -f -ttt -T -xx -s 24 -o /host/$out "$@"
