// Package engine is a user-space InfiniBand Communication Manager (IBTA
// vol. 1 chapter 12) written as a sans-I/O state machine, in the manner of
// etcd raft's RawNode. It follows the Linux kernel's CM
// (drivers/infiniband/core/cm.c) wherever the kernel and the IBTA text
// leave room for choice, so that a Linux peer cannot tell it from the
// kernel's CM plus rdma_cm.
//
// The engine has no goroutines, clock, file descriptors or randomness.
// Everything comes in through method calls and goes out through a Ready
// record:
//
//   - inputs: API calls (Listen, Connect, Accept, Reject, MRA, Establish,
//     Disconnect, ResolveSIDR, ReplySIDR, Notify, Destroy), a received MAD
//     with its address (Receive), and the passage of time (Tick). Every
//     input carries the current time; the engine never reads a clock.
//   - outputs (Ready): MADs to send with their destinations, events for the
//     user, QP transitions to apply (qp.Attr and qp.Mask, valid per
//     qp.Check) for connections whose QP the engine drives, and the next
//     deadline at which Tick must be called.
//
// Communication IDs, transaction IDs and PSNs come from the injected
// Source. NewSeededSource gives a deterministic one for tests; a real
// transport injects a random one.
//
// # The caller's duties
//
//  1. Feed every received CM MAD to Receive with the address it came from.
//  2. After any input, if HasReady, take Ready, send its Messages in
//     order, apply its QPTransitions in order (stop at the first that
//     fails and Reject or Destroy the ID), deliver its Events, then call
//     Advance. Slices in the Ready (PrivateData, ARI) stay valid until
//     Advance.
//  3. Call Tick at or after Ready.Deadline (zero means no timer is armed).
//  4. Destroy every ID it no longer needs; an ID in TimeWait keeps its
//     communication ID reserved until TimeWait ends, even once destroyed.
//
// # Kernel behaviour followed
//
// Timers use the kernel's approximation of 4.096 µs × 2^n as 2^(n-8) ms
// (cm_convert_to_ms). A REQ is resent every 2 × PacketLifeTime + remote CM
// response timeout, a REP every local CM response timeout of the REQ, and a
// DREQ at its side's interval (the REQ's on the active side, the REQ's
// local CM response timeout on the passive side: cm_id_priv->timeout_ms),
// MaxCMRetries times; an MRA replaces the wait with its service
// timeout plus the path's ACK timeout. When retries run out the engine
// reports ReqError, RepError or DreqError and sends nothing (the kernel's
// cm_process_send_error sends no REJ). TimeWait lasts the QP's local ACK
// timeout (cm_enter_timewait).
//
// Like the rdma_cm, the engine arms a delayed MRA on the passive side once a
// REQ is reported, and on the active side once a REP is reported: no MRA is
// sent unless a duplicate REQ or REP arrives. LAP and APR are dropped, as
// Linux does on RoCE ports (cm_lap_handler, cm_apr_handler); the engine
// keeps no alternate path on InfiniBand ports either.
//
// # InfiniBand ports
//
// Ports are RoCE unless Config.InfiniBandPorts names them. On an
// InfiniBand port the engine addresses the peer by LID, as ib_cm does:
// Connect and ResolveSIDR take a LID-routed path (RoCE false, as an SA
// PathRecord gives it) and send to its DLID; a received REQ yields a
// path with RoCE false, DLID the REQ's source LID, SLID the REQ's remote
// port LID, and a GRH only if the REQ came with one
// (cm_process_routed_req, cm_format_path_lid_from_req); every MAD to
// that peer, and every answer to a MAD without an ID, goes to its LID on
// QP 1, and the QP's address vector is DLID and SL, with a GRH only for
// a hop limit above 0 (ib_init_ah_attr_from_path).
//
// ECE is carried, never interpreted: the REQ and REP events carry the
// peer's ECE, Connect and Accept take the ECE to send. The ordering rule
// (no REP before the local ECE is set or declined) belongs to package cm.
//
// # Half-open connections
//
// The kernel bounds only the requests an application has not read
// (rdma_ucm's backlog, whose counterpart here is ListenParams.Backlog).
// The engine also bounds what a peer that never finishes a handshake can
// make it hold, as TCP's SYN backlog does. Each listener holds at most
// Config.MaxHalfOpen (default DefaultMaxHalfOpen) half-open IDs: passive
// IDs from the REQ or SIDR_REQ until ESTABLISHED or the end of the
// attempt. Past the bound a new request evicts the
// listener's oldest ID whose REP still waits for its RTU: that ID ends
// as if the REP's retries had run out (REP_ERROR, IDLE, no TimeWait) and
// its peer gets REJ 3 (no resources), so that a live peer does not count
// the connection as made. Waiting IDs are the ones to give up: the
// consumer has answered them and a forged REQ never answers back, while
// the REQ's own timeouts, which the peer chooses, could keep them for
// hours. If every half-open ID still waits for the consumer (Accept,
// Reject, ReplySIDR), the new request is dropped without a REJ: a live
// peer resends its REQ, and a forged one draws no answer. Duplicate and
// stale REQs are matched by the remote ID and QPN tables before the bound
// is consulted, so they never take a second ID. Stats.BacklogDrops and
// Stats.Evicted count both outcomes; HalfOpen reports a listener's count.
// docs/reliability.md measures a flood of forged REQs.
package engine
