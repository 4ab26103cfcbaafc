//go:build !linux

package main

import "os"

// rawStdout is os.Stdout off Linux (see stdout_linux.go).
type rawStdout struct{}

func (rawStdout) Write(b []byte) (int, error) { return os.Stdout.Write(b) }
