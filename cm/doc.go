// Package cm is an RDMA connection manager with the rdma_cm(7) model:
// event channels, IDs in a port space, address and route resolution,
// listen/connect/accept/reject/disconnect, and Enhanced Connection
// Establishment (ECE). It is pure Go, with two backends behind the same
// API (Options.Backend):
//
//   - BackendKernel speaks the rdma_cm user ABI (/dev/infiniband/rdma_cm,
//     ucma ABI 4) to the kernel's rdma_cm and ib_cm.
//   - BackendUser runs the CM protocol in user space, for hosts without
//     ib_cm: one CM engine (cm/engine) per RoCE port, receiving MADs
//     through /dev/infiniband/umadN and sending them from a UD QP of its
//     own (internal/umad), with address and route resolution done as the
//     rdma_cm does it for RoCE.
//
// BackendAuto, the default, takes the kernel backend where rdma_ucm is
// loaded and elsewhere the user backend (the kernel's if that fails). QPs
// come from package uverbs with either.
//
// # Use
//
//  1. Open a Channel. The kernel backend's fd is non-blocking and lives in
//     Go's netpoller; each wake-up drains it until EAGAIN. The user
//     backend's events come from its engines, run by goroutines of its
//     own. Close destroys the channel's IDs and interrupts every waiter.
//  2. CreateID in a port space. A synchronous ID (IDOptions.Sync, like an
//     rdma_cm_id without a channel) makes ResolveAddr, ResolveRoute,
//     Connect, Accept, Disconnect and GetRequest wait for their completion
//     event, and hands its other events to ID.GetEvent. An asynchronous
//     ID's calls return once issued; its events come from
//     Channel.GetEvent.
//  3. Every event returned by GetEvent is the caller's until Ack; its
//     private data must not be used after Ack. A CONNECT_REQUEST event's
//     ID is the new passive ID (Event.Listener is the listener).
//  4. For data, give the ID a QP: CreateQP (the library moves it through
//     INIT, RTR and RTS, as rdma_create_qp does) or an application QP,
//     moved with InitQPAttr and passed by number in ConnParam.QPNum. A
//     library QP may receive from a shared receive queue (ID.CreateSRQ,
//     as rdma_create_srq; QPInit.SRQ), shared by many IDs' QPs.
//  5. Destroy IDs when done.
//
// # ECE
//
// SetLocalECE, RemoteECE, RejectECE and the ECE carried by Connect and
// Accept follow librdmacm (rdma_set_local_ece(3), rdma_get_remote_ece(3),
// rdma_reject_ece(3)); a library QP handles ECE by itself. On top of that,
// one state machine for every backend orders the exchange: the local ECE
// cannot change once the REQ or REP carrying it has left (*ECEOrderError),
// and an application QP must answer a REQ's ECE offer before Accept
// (*ECEUnansweredError) or decline it (ConnParam.DeclineECE). The state
// diagram is in docs/ece.md.
//
// # Concurrency
//
// Safe from several goroutines at once:
//
//   - Channel: every method. Concurrent GetEvent calls each get different
//     events; one goroutine at a time reads the backend and the others
//     wait for its news. Close may be called at any time and more than
//     once.
//   - ID: every method, including Destroy. Operations take the ID's lock
//     while they check the state and issue the command, so two racing
//     operations are ordered: for example of two Connects one sends the
//     REQ and the other gets a *StateError. A synchronous call does not
//     hold the lock while it waits for its event, so State, SetLocalECE,
//     Disconnect or Destroy can run meanwhile.
//   - Event.Ack, from any goroutine; a second Ack is an error.
//   - Multicast.AH and Leave.
//
// Destroy and Close interrupt blocked calls: a synchronous ResolveAddr,
// ResolveRoute, Connect, Accept, Disconnect or JoinMulticast waiting for
// its event, ID.GetEvent and GetRequest return an error matching ErrClosed
// promptly, whichever goroutine is reading the backend; Close does the
// same for Channel.GetEvent. A command issued concurrently with Destroy
// reaches the backend before the ID is destroyed or not at all; every
// later call fails with ErrClosed.
//
// Not safe:
//
//   - Waiting for one synchronous ID's events in two goroutines at once
//     (ID.GetEvent beside a synchronous call of the same ID, say): each
//     event goes to one of them, and a call whose completion event went
//     to the other waits until ctx ends.
//   - Using an Event, or its private data, after Ack or concurrently with
//     it. An event belongs to the goroutine that received it.
//   - Posting to a library QP or polling its CQs while another goroutine
//     calls DestroyQP, Destroy or Channel.Close: the queues are unmapped.
//     Posting and polling themselves follow package uverbs (QP.PostSend,
//     QP.PostRecv and CQ.Poll serialise internally). The library moves
//     the QP through its states under the ID's lock.
//   - Writing ID.Context or Multicast.Context while another goroutine
//     reads it: they are plain fields.
//   - Using the context and PD from ID.Verbs after Channel.Close, which
//     closes them.
//
// # Errors
//
// Errors read as one sentence, "cm: op: cause", the operation in words
// with its address where it has one ("cm: resolve address 192.0.2.99:
// network is unreachable"); a uverbs or engine error under it keeps its
// detail but not its own prefix ("cm: create QP: modify QP 0x11 to INIT
// (…) on rxe0: invalid argument"). They wrap one of the sentinels below
// (when one applies) and, for kernel failures, the errno, so
// errors.Is(err, cm.ErrNoDevice) and errors.Is(err, unix.ENODEV) both
// hold. The errno table is rdma.ErrnoSentinel's, the same for uverbs and
// cm/engine. The shared sentinels are package rdma's (cm.ErrNotSupported
// == uverbs.ErrNotSupported == rdma.ErrNotSupported, engine.ErrBusy ==
// rdma.ErrBusy). A connect to a port where nothing listens reads
// "cm: connect to 192.0.2.2:7471: connection refused: no listener (reason
// 8, invalid service ID)" and matches ECONNREFUSED, as net's does.
//
//   - ErrNotSupported: the backend or device lacks the operation (EOPNOTSUPP, ENOSYS).
//   - ErrNoDevice: no RDMA device serves the address, or it went away (ENODEV, DEVICE_REMOVAL).
//   - ErrPermission: a device node may not be opened (EACCES, EPERM).
//   - ErrNoRoute: the destination does not route over RDMA (EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL).
//   - ErrTimeout: a resolution or connection step timed out (ETIMEDOUT, UNREACHABLE).
//   - ErrRejected: the peer rejected the connection; a *RejectError with the REJ reason.
//   - ErrInvalidState: not valid in the ID's state; a *StateError, or the CM engine's refusal.
//   - ErrInvalidArgument: an argument is out of range (EINVAL).
//   - ErrBusy: the address or service ID is in use (EBUSY, EADDRINUSE).
//   - ErrClosed: the channel or ID was closed or destroyed.
//   - ErrDisconnected: the connection ended while waiting (DISCONNECTED).
//   - ErrConnect: the connection failed (CONNECT_ERROR).
//   - ErrECEOrder: an ECE step came too late or was skipped; an *ECEOrderError or *ECEUnansweredError.
//   - ErrECEVendorMismatch: a REP answered the REQ's ECE with another vendor.
//   - ErrDeclineWithLocalECE: Accept declined ECE after SetLocalECE.
//   - ErrLibraryQP: the call is for external QPs, the ID has a library QP.
//   - ErrQPExists: CreateQP on an ID that already has a QP.
//
// Other systems. The package builds on every GOOS (its portable files name
// errnos through internal/unix, the module's OS shim), but off Linux both
// backends are missing: Open fails with an error matching ErrNotSupported
// that reads "cm: ...: not supported on GOOS". Package cm/engine is pure
// Go and works everywhere.
//
// # Not ported
//
// Migrating an ID between channels (rdma_migrate_id), the AF_IB address
// family and rdma_getaddrinfo, setting an IB path record
// (RDMA_OPTION_IB_PATH), the IP-only QUERY_ROUTE command (QUERY ADDR and
// PATH are used), XRC on library QPs (SRQs are there: ID.CreateSRQ and
// QPInit.SRQ), rdma_create_ep and the rdma_verbs.h helpers, and attaching
// a library QP to a joined multicast group (attach it with the verbs layer
// using Multicast.AH). The user
// backend also refuses UD IDs (the engine has SIDR, the backend does not
// wire it), multicast, AF_IB and InfiniBand-link ports, which need
// an SA path query.
package cm
