// Command waitcost reads COUNT bytes from stdin, one wait each, the way
// the library waits for a completion event: "blocking" is one read(2) on
// the runtime's syscall path (uverbs' WaitBlocking, rsocket's
// ThreadWait), "sliced" that with ppoll slices of 5 ms after a long wait
// (WaitBlocking's), "netpoll" a read that parks in the netpoller on EAGAIN
// (uverbs' Wait, the default). run.sh counts the syscalls each makes
// against C's one read per wait, by how long each wait lasts.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: waitcost blocking|blocking-yield|sliced|netpoll COUNT")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var b [1]byte
	switch os.Args[1] {
	case "blocking":
		for range n {
			if _, err := syscall.Read(0, b[:]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	case "blocking-yield":
		// As blocking, passing through the scheduler every 5 ms: sysmon
		// takes the P of a goroutine that has not been rescheduled for
		// 10 ms at every syscall it sees it in, idle Ps or not.
		last := time.Now()
		for range n {
			if time.Since(last) >= 5*time.Millisecond {
				runtime.Gosched()
				last = time.Now()
			}
			if _, err := syscall.Read(0, b[:]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	case "netpoll":
		if err := syscall.SetNonblock(0, true); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		f := os.NewFile(0, "stdin")
		for range n {
			if _, err := f.Read(b[:]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	case "sliced":
		// As blocking-yield, but a wait that begins 5 ms or more after
		// the last one began, with GOMAXPROCS over 1 (uverbs'
		// WaitBlocking), waits in ppoll slices of 5 ms, under the 10 ms
		// after which sysmon takes the P of a thread in one syscall,
		// idle Ps or not.
		last := time.Now()
		var prev time.Time
		multi := runtime.GOMAXPROCS(0) > 1
		fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
		for range n {
			start := time.Now()
			if start.Sub(last) >= 5*time.Millisecond {
				runtime.Gosched()
				last = start
			}
			long := multi && !prev.IsZero() && start.Sub(prev) >= 5*time.Millisecond
			prev = start
			for long {
				slice := unix.NsecToTimespec(int64(5 * time.Millisecond)) // ppoll leaves the rest in it
				k, err := unix.Ppoll(fds, &slice, nil)
				if k > 0 {
					break
				}
				if err == nil {
					runtime.Gosched()
				}
			}
			if _, err := syscall.Read(0, b[:]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: waitcost blocking|blocking-yield|sliced|netpoll COUNT")
		os.Exit(2)
	}
}
