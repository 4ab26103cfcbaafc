package rsocket_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"

	"github.com/go-rdma/rdmacm/rsocket"
)

// exampleAddr is where the examples listen and dial (guest a in the
// vmtest guests; TestExamplesInGuest runs them there).
var exampleAddr = "192.0.2.1:7496"

// An echo over rsockets: the server is a net.Listener, the client a
// net.Conn; either end could be a C program using librdmacm's rsockets.
func Example() {
	l, err := rsocket.Listen(exampleAddr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) // echo until the client's CloseWrite
	}()

	c, err := rsocket.Dial(context.Background(), exampleAddr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "hello over RDMA")
	c.CloseWrite() // the server reads io.EOF
	reply, err := io.ReadAll(c)
	fmt.Printf("%s %v\n", reply, err)
}

// net/http over rsockets: the server serves on an rsocket Listener, the
// client dials through the Dialer.
func ExampleDialer() {
	l, err := rsocket.Listen(exampleAddr, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s", r.URL.Path[1:])
	}))

	client := &http.Client{Transport: &http.Transport{DialContext: (&rsocket.Dialer{}).DialContext}}
	resp, err := client.Get("http://" + exampleAddr + "/rdma")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	fmt.Println(resp.Status, string(body))
}
