// Package enginetest provides test doubles for code built on the sans-I/O
// CM engine (package cm/engine): a simulated RoCE fabric that wires any
// number of engines together in memory, with a virtual clock, seeded fault
// injection and step-by-step delivery. It needs no RDMA device, no
// privileges and no particular GOOS, so tests that use it run under plain
// go test everywhere.
//
// # Model
//
// A Fabric holds n nodes, numbered from 1. Each Node is one CA: an
// engine.Engine, an IPv4 address 192.0.2.<number> and the RoCE GID made
// from it. The fabric is the engine's driver, doing what the engine's
// package documentation calls the caller's duties: it feeds every MAD
// that reaches a node to Engine.Receive, takes Ready after every input,
// puts its Messages on the wire, checks its QP transitions against a fake
// QP with qp.Check, records its Events and calls Advance, and it calls
// Tick when a deadline passes. After every input it also runs
// Engine.CheckInvariants. Anything wrong (an invariant, a bad QP
// transition, a MAD to an unknown address, an error from an automatic
// answer) is collected and returned by Fabric.Err.
//
// Time is virtual: it starts at Epoch and moves only when the test calls
// Advance, Step, RunUntil or RunUntilIdle, so a 98-second REQ timeout
// costs microseconds. Every random choice (which messages a fractional
// fault hits, reorder delays, the engines' communication IDs and PSNs)
// comes from the seed given with WithSeed: the same test with the same
// seed produces the same messages, events and times.
//
// # Delivery
//
// A MAD sent at time t arrives at t plus the fabric's latency (WithLatency,
// default 0) plus any delay a fault adds. Messages due at the same time
// are delivered in the order they were sent. Settle delivers everything
// due now without moving the clock; Step does one thing (one delivery, or
// one move of the clock with the timers it fires); Advance runs for a
// duration; RunUntil and RunUntilIdle run until a condition holds or
// nothing is in flight and no timer is armed.
//
// # Faults
//
// AddFault installs a rule that drops, duplicates, delays or reorders the
// messages it matches: by sender, receiver and message kind
// (mad.AttrREQ, mad.AttrREP, ...), for a fraction of them (Rate, drawn
// from the seeded generator) and at most Count times. Partition and Heal
// cut and restore both directions between two nodes; Crash loses a node's
// engine and everything sent to it, Restart boots a fresh engine in its
// place.
//
// # Answering events
//
// By default nobody answers events: the test reads them (Node.Events,
// Fabric.Events) and calls Node.Accept, Node.Establish and so on, or any
// engine method through Node.Do. A Policy makes a node answer by itself
// (accept every request, send the RTU, answer a DREQ, destroy finished
// IDs), and Node.OnEvent installs a hook of the test's own.
//
// # One fault model
//
// The repository's own transcript and sweep tests drive the same fabric
// through internal/testfabric; this package is its public face, written
// against the engine's public API only, so that it documents the contract
// a driver must keep (see the Ready loop example) and stays stable while
// the internal side follows those tests.
//
// A Fabric is not safe for concurrent use; independent fabrics may run in
// parallel.
package enginetest
