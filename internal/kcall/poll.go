package kcall

// PollFD is struct pollfd, the entry ppoll(2) reads and fills in; the
// same layout on every Linux arch (TestPollFDLayout).
type PollFD struct {
	FD      int32
	Events  int16
	Revents int16
}

// The poll(2) event bits (asm-generic/poll.h; the same on every arch
// this module builds for).
const (
	PollIn  = 0x1
	PollErr = 0x8
	PollHup = 0x10
)
