package kcall

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPollFDLayout holds PollFD and the bits to x/sys's, which are
// generated from the kernel's headers.
func TestPollFDLayout(t *testing.T) {
	var a PollFD
	var b unix.PollFd
	if unsafe.Sizeof(a) != unsafe.Sizeof(b) || unsafe.Offsetof(a.Events) != unsafe.Offsetof(b.Events) ||
		unsafe.Offsetof(a.Revents) != unsafe.Offsetof(b.Revents) {
		t.Fatalf("PollFD %d bytes, events at %d, revents at %d; pollfd %d, %d, %d", unsafe.Sizeof(a),
			unsafe.Offsetof(a.Events), unsafe.Offsetof(a.Revents), unsafe.Sizeof(b), unsafe.Offsetof(b.Events), unsafe.Offsetof(b.Revents))
	}
	if PollIn != unix.POLLIN || PollErr != unix.POLLERR || PollHup != unix.POLLHUP {
		t.Fatal("poll bits differ from the kernel's")
	}
}

// TestPpollEventfd: an eventfd written wakes a ppoll on it; with nothing
// ready a timeout ends it.
func TestPpollEventfd(t *testing.T) {
	efd, err := Eventfd()
	if err != nil {
		t.Fatal(err)
	}
	defer Close(efd)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	if _, err := Write(efd, one); err != nil {
		t.Fatal(err)
	}
	fds := []PollFD{{FD: int32(p[0]), Events: PollIn}, {FD: int32(efd), Events: PollIn}}
	n, err := Ppoll(fds, -1)
	if err != nil || n != 1 || fds[0].Revents != 0 || fds[1].Revents&PollIn == 0 {
		t.Fatalf("ppoll: %d, %v, revents %#x %#x; want the eventfd alone", n, err, fds[0].Revents, fds[1].Revents)
	}
	var b [8]byte
	if _, err := Read(efd, b[:]); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if n, err := Ppoll(fds, int64(20*time.Millisecond)); n != 0 || err != nil || time.Since(t0) < 20*time.Millisecond {
		t.Fatalf("ppoll of nothing ready for 20 ms: %d, %v after %v", n, err, time.Since(t0))
	}
	if _, err := Read(efd, b[:]); err != unix.EAGAIN {
		t.Fatalf("second read of the eventfd: %v, want EAGAIN", err)
	}
}
