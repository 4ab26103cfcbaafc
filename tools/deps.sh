#!/bin/bash
# deps.sh: install, from Debian's packages, the tools the tests use. Safe to
# re-run; installs only what is missing.
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1; }
have gcc || need+=(gcc libc6-dev)
have tshark || need+=(tshark)
have qemu-s390x-static || need+=(qemu-user-static)
have qemu-system-x86_64 || need+=(qemu-system-x86)
# The arm64 guest (make vmtest-arm64, TestMixedSmoke in make vmtest) and
# the C peers cross-compiled for it; its packages come from Debian's arm64
# archive, which internal/vmtest enables (dpkg --add-architecture arm64).
have qemu-system-aarch64 || need+=(qemu-system-arm)
have aarch64-linux-gnu-gcc || need+=(gcc-aarch64-linux-gnu)
[ -x /bin/busybox ] || need+=(busybox-static)
have tcpdump || need+=(tcpdump)
have cpio || need+=(cpio)
[ -e /usr/sbin/ip ] || need+=(iproute2)
[ -e /usr/bin/rdma ] || need+=(iproute2)
[ -f /usr/include/rdma/rdma_cma.h ] || need+=(librdmacm-dev)
[ -f /usr/include/infiniband/verbs.h ] || need+=(libibverbs-dev)
[ -f /usr/include/rdma/ib_user_verbs.h ] || need+=(linux-libc-dev)
# The real libmlx5 (rdma-core 44), the oracle of the mlx5 differential
# tests (internal/mlx5sim): ibverbs-providers ships it and the plugin.
compgen -G '/usr/lib/*/libmlx5.so.1' >/dev/null || need+=(ibverbs-providers)
compgen -G '/usr/lib/*/libibverbs/libmlx5-rdmav*.so' >/dev/null || need+=(ibverbs-providers)
if [ ${#need[@]} -gt 0 ]; then
	echo "deps: installing ${need[*]}"
	[ "$(id -u)" = 0 ] && sudo= || sudo=sudo
	export DEBIAN_FRONTEND=noninteractive
	echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
	$sudo apt-get update -q >/dev/null
	$sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
