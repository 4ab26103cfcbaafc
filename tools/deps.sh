#!/bin/bash
# deps.sh: install, from Debian's packages, the tools the tests use. Safe to
# re-run; installs only what is missing.
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1; }
have gcc || need+=(gcc libc6-dev)
have tshark || need+=(tshark)
have qemu-s390x-static || need+=(qemu-user-static)
# The dynamic qemu-user (qemu-x86_64, qemu-aarch64): the static build loads
# no TCG plugins, and the mlx5 fence comparison runs under one.
have qemu-x86_64 || need+=(qemu-user)
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
# The mlx5 differential on arm64 (internal/mlx5sim, TestDifferentialArm64):
# Debian's aarch64 cross compiler, qemu-user's dynamic qemu-aarch64 (TCG
# plugins load only into it), and apt knowing Debian's arm64 packages, from
# which the test unpacks libmlx5's arm64 build into a sysroot in its cache.
have aarch64-linux-gnu-gcc || need+=(gcc-aarch64-linux-gnu)
# Its C library headers are only a Recommends of the cross compiler.
[ -f /usr/aarch64-linux-gnu/include/stdio.h ] || need+=(libc6-dev-arm64-cross)
have qemu-aarch64 || need+=(qemu-user)
arm64=0
dpkg --print-foreign-architectures | grep -qx arm64 || arm64=1
apt-cache show libibverbs1:arm64 >/dev/null 2>&1 || arm64=1
if [ ${#need[@]} -gt 0 ] || [ $arm64 = 1 ]; then
	[ "$(id -u)" = 0 ] && sudo= || sudo=sudo
	export DEBIAN_FRONTEND=noninteractive
	if [ $arm64 = 1 ]; then
		echo "deps: adding Debian's arm64 packages to apt"
		$sudo dpkg --add-architecture arm64
	fi
	$sudo apt-get update -q >/dev/null
fi
if [ ${#need[@]} -gt 0 ]; then
	echo "deps: installing ${need[*]}"
	echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
	$sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
