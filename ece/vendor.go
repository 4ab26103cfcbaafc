package ece

// Known vendor IDs.
//
// mlx5 (vendor 0x15b3, the Mellanox PCI vendor ID rather than an IEEE OUI)
// is the only provider known to implement ECE. What is known of its option
// bits, from rdma-core's mlx5 provider and UCX's use of it:
//
//   - bits 31:28 are an ECE version. The mlx5 provider sends 0x10000000
//     ("version 1") at create-QP as a trigger; the firmware answers with
//     what it supports.
//   - bit 0 enables selective repeat (UCX, with version 2).
//
// Unverified: the meaning of every other bit, and UCX's "version 3"
// (congestion control) bit. Neither rdma-core nor the kernel document the
// bits; the kernel passes them to firmware uninterpreted. Nothing here was
// run on mlx5 hardware.
const (
	VendorMellanox uint32 = 0x15b3

	// MellanoxVersionMask selects the mlx5 ECE version (bits 31:28).
	MellanoxVersionMask uint32 = 0xf000_0000
	// MellanoxVersion1 is the trigger value the mlx5 provider sends at
	// create-QP.
	MellanoxVersion1 uint32 = 0x1000_0000
	// MellanoxSelectiveRepeat is bit 0 as UCX uses it (unverified).
	MellanoxSelectiveRepeat uint32 = 1 << 0
)
