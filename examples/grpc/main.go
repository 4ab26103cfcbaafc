// Command grpc runs gRPC over rsockets: the server serves on an
// rsocket.Listener, the client dials with rsocket.Dialer through
// grpc.WithContextDialer. It makes a unary call and a server-streaming
// call, and checks every byte. It is its own module, so that the library
// module keeps golang.org/x/sys as its only run-time dependency.
//
//	grpc -s -a 192.0.2.1                    # server
//	grpc -a 192.0.2.1 -size 16777216        # client
//
// The service is written out by hand (no protoc): two methods whose
// messages are protobuf's well-known wrappers.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-rdma/rdmacm/rdma"
	"github.com/go-rdma/rdmacm/rsocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var (
	server  = flag.Bool("s", false, "server")
	addr    = flag.String("a", "192.0.2.1", "server address")
	port    = flag.String("p", "50051", "port")
	size    = flag.Uint64("size", 16<<20, "client: bytes to stream")
	calls   = flag.Int("n", 2, "server: exit after this many calls (0: never)")
	backend = flag.String("backend", "", "CM backend: auto, kernel, user")
)

// demo is the service: Echo returns its argument, Download streams the
// shared ChaCha8 stream in 1 MiB messages.
type demo interface {
	Echo(context.Context, *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error)
	Download(*wrapperspb.UInt64Value, grpc.ServerStream) error
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: "rsocket.example.Demo",
	HandlerType: (*demo)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.BytesValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return srv.(demo).Echo(ctx, in)
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Download",
		ServerStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			in := new(wrapperspb.UInt64Value)
			if err := stream.RecvMsg(in); err != nil {
				return err
			}
			return srv.(demo).Download(in, stream)
		},
	}},
}

func stream(n uint64) io.Reader {
	var key [32]byte
	key[0] = 3
	return io.LimitReader(rand.NewChaCha8(key), int64(n))
}

type service struct {
	done func()
}

func (s *service) Echo(_ context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	defer s.done()
	fmt.Printf("server: Echo %d bytes\n", len(in.Value))
	return wrapperspb.Bytes(in.Value), nil
}

func (s *service) Download(in *wrapperspb.UInt64Value, out grpc.ServerStream) error {
	defer s.done()
	r := stream(in.Value)
	buf := make([]byte, 1<<20)
	var sent uint64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if err := out.SendMsg(wrapperspb.Bytes(buf[:n])); err != nil {
				return err
			}
			sent += uint64(n)
		}
		if err != nil {
			break
		}
	}
	fmt.Printf("server: Download %d bytes\n", sent)
	return nil
}

func main() {
	flag.Parse()
	opts := rsocket.Options{Backend: rdma.Backend(*backend)}
	address := net.JoinHostPort(*addr, *port)
	var err error
	if *server {
		err = serve(address, &opts)
	} else {
		err = call(address, &opts)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func serve(address string, opts *rsocket.Options) error {
	l, err := rsocket.Listen(address, opts)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	var n atomic.Int64
	srv.RegisterService(&serviceDesc, &service{done: func() {
		if n.Add(1) == int64(*calls) {
			go srv.GracefulStop()
		}
	}})
	fmt.Printf("listening on %s\n", l.Addr())
	return srv.Serve(l)
}

func call(address string, opts *rsocket.Options) error {
	dialer := &rsocket.Dialer{Options: *opts}
	conn, err := grpc.NewClient("passthrough:///"+address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", a)
		}))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	msg := make([]byte, 100000)
	io.ReadFull(stream(uint64(len(msg))), msg)
	out := new(wrapperspb.BytesValue)
	start := time.Now()
	if err := conn.Invoke(ctx, "/rsocket.example.Demo/Echo", wrapperspb.Bytes(msg), out); err != nil {
		return fmt.Errorf("Echo: %w", err)
	}
	if !bytes.Equal(out.Value, msg) {
		return fmt.Errorf("Echo: %d bytes back, not the %d sent", len(out.Value), len(msg))
	}
	fmt.Printf("client: Echo %d bytes, identical, %v\n", len(msg), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	st, err := conn.NewStream(ctx, &serviceDesc.Streams[0], "/rsocket.example.Demo/Download")
	if err != nil {
		return err
	}
	if err := st.SendMsg(wrapperspb.UInt64(*size)); err != nil {
		return err
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	got, want := sha256.New(), sha256.New()
	var n uint64
	for {
		m := new(wrapperspb.BytesValue)
		if err := st.RecvMsg(m); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("Download after %d bytes: %w", n, err)
		}
		got.Write(m.Value)
		n += uint64(len(m.Value))
	}
	io.Copy(want, stream(*size))
	if n != *size || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		return fmt.Errorf("Download: %d bytes, want %d, sha256 equal: %v", n, *size, bytes.Equal(got.Sum(nil), want.Sum(nil)))
	}
	fmt.Printf("client: Download %d bytes, identical, %.1f MB/s\n", n, float64(n)/time.Since(start).Seconds()/1e6)
	return nil
}
