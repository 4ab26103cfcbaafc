// Package rdmacm is the endpoint layer: RDMA connections with the shape of
// package net. Dial resolves a "host:port" (names, IPv4, IPv6), resolves
// the route and connects; Listen and Listener.Accept serve; an Endpoint
// posts sends, receives, RDMA WRITEs and READs on library-allocated,
// registered memory and waits for their completions with a context.
// Everything else about a connection is a field of EndpointOptions:
// private data, receives posted before the REQ or REP leaves (RecvSlots),
// shared CQs, ECE, and a per-connection Setup hook that sees the peer's
// private data and may answer with its own, register memory, or give the
// caller's QP.
//
//	ep, err := rdmacm.Dial(ctx, "server:7471", nil)
//	...
//	msg, err := ep.RegMsgs(4096)         // registered, off the Go heap
//	copy(msg.Bytes(), "hello")
//	err = ep.PostSend(msg, 0, 5)
//	_, err = ep.WaitSend(ctx)
//
// It is built on packages cm (the rdma_cm-style API, on the kernel CM or
// this module's own CM engine) and uverbs (verbs without libibverbs); use
// those for what this layer leaves out. Endpoint.QP, Endpoint.PD,
// Endpoint.ID and ConnSetup.QP give access to the layers below; they are
// the escape hatches, and their types are as experimental as uverbs and
// cm (docs/api.md).
//
// # Defaults
//
// A nil *EndpointOptions, and every zero field of one, mean librdmacm's
// defaults for a NULL rdma_conn_param: retry count 7, RNR retry count 7,
// the device's maximum responder resources and initiator depth. A field is
// set to zero explicitly with a negative value, so options that carry only
// private data cannot change the retry counts. cm.ConnParam has the same
// rule (a zero field is the default; cm.RetryNone and cm.ResourcesNone ask
// for 0), and a negative option here is passed to it as that sentinel.
//
// # Memory
//
// RegMsgs, RegRead and RegWrite (rdma_reg_msgs, rdma_reg_read,
// rdma_reg_write) allocate page-aligned memory outside the Go heap with
// uverbs.AllocBuffer and register it; MR.Close deregisters it, then frees
// it. RegMemory registers memory the caller mapped (a memfd or file
// mapping, huge pages), at its address or at an IOVA (MemOptions), and
// refuses Go-heap memory; RegDmabuf registers a dma-buf. RemoteBuf is the (address, rkey, length) triple a peer needs for
// RDMA WRITE and READ, with a 16-byte encoding for private data and
// messages.
//
// # Completions
//
// Every work request posted through an Endpoint is signaled and its work
// request ID is the offset given to the post, so a completion names its
// slot. WaitSend and WaitRecv poll the endpoint's send or receive CQ,
// arm it, poll again, then sleep on the endpoint's completion channel (one
// channel serves both CQs; its fd is in the Go netpoller, or with
// EndpointOptions.ThreadWait read in the kernel, one read(2) a wait as C
// reads it), after an optional spin budget (EndpointOptions.Spin). Their error is non-nil
// exactly when the completion failed, and is then the WC's Err: a
// *WCError that matches ErrCompletion, the WC's Err (both ways) and a
// sentinel (ErrTimeout for retries exceeded, ErrPermission for access
// errors, ErrDisconnected for flushed work requests, ...); or when no
// completion came (ctx, Close, the end of the connection). One check,
// err != nil, covers both.
//
// # Disconnect
//
// When the peer disconnects (or Disconnect is called), Done is closed and
// the QP moves to ERR, which flushes the work requests still posted. The
// waits return the completions that came before, in order; the flushed
// ones are not returned: once only they remain, WaitRecv returns io.EOF
// and WaitSend an error matching ErrDisconnected, and so does every later
// call. Close disconnects (without waiting), moves
// the QP to ERR and destroys the QP, the CQs, the completion channel and
// the CM ID, in that order; it interrupts every blocked call. Every
// blocking call takes a context.
//
// # Errors
//
// Errors wrap the module's sentinels, re-exported here (ErrTimeout ==
// cm.ErrTimeout == rdma.ErrTimeout), and match them with errors.Is; a
// rejection is a *cm.RejectError (errors.Is(err, ErrRejected)).
//
// # Platforms
//
// The endpoint layer runs on Linux; elsewhere Dial and Listen return
// ErrNotSupported.
package rdmacm
