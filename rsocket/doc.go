// Package rsocket is a net.Conn over RDMA that speaks librdmacm's rsockets
// protocol (rsocket.c, rdma-core v44): a Go program can talk to C programs
// using rsockets (rstream, rcopy, riostream, anything LD_PRELOADed with
// librspreload) and to other Go programs, with no cgo.
//
// Dial(ctx, address, opts) and Listen(address, opts) take "host:port"
// strings, as the root package's Dial and Listen do (docs/api.md's context
// convention); a Dialer plugs into http.Transport.DialContext and gRPC's
// WithContextDialer. Conn.CloseWrite
// half-closes; deadlines, Close and io.EOF behave as on a TCP connection.
// Conn.IOMap and Conn.WriteAt are rsockets' riomap and riowrite: windows of
// memory the peer writes into directly. See docs/rsocket.md for the
// protocol and what is proven where.
package rsocket
