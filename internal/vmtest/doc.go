// Package vmtest is the real-kernel test bed: it prepares a cached image
// of Debian's kernel with soft-RoCE and rdma-core's tools, boots pairs of
// QEMU guests joined by a virtual Ethernet wire that tcpdump can capture,
// and runs commands in them. Tests that need it run only with VMTEST=1;
// with it, a guest that does not boot fails them. README.md lists the
// pieces and docs/testing.md how to run the guests by hand.
package vmtest
