// Package abi holds the kernel's RDMA user ABI as Go: the structs,
// constants and ids of uverbs (ib_user_verbs.h and the ioctl ids), of the
// rxe and mlx5 drivers, of the rdma_cm's ucma, of umad and of RDMA
// netlink, with their codecs (Bytes, Decode, the sockaddr and inline
// encoders) and the tests that hold every layout to the C headers
// (layout_test.go and the *_layout_test.go files). Nothing here makes a
// syscall: package internal/kcall issues them with these structs.
//
// The barrier*.go files are the memory barriers and doorbell writes of
// the data path (see barrier.go).
package abi
